#include "diode/features.h"

#include <cmath>
#include <stdexcept>

namespace diode {
namespace {

// log2(1 + x): defined at 0, close to log2(x) for the large sizes that dominate.
inline float lg(double x) { return static_cast<float>(std::log2(1.0 + x)); }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

void check_range(int64_t value, int64_t lo, int64_t hi, const char* table, size_t row,
                 const std::string& column) {
  if (value < lo || value > hi) {
    fail(std::string(table) + " row " + std::to_string(row) + ": column '" + column +
         "' is " + std::to_string(value) + ", expected " + std::to_string(lo) + ".." +
         std::to_string(hi));
  }
}

constexpr int64_t kMaxDim = int64_t{1} << 40;

}  // namespace

const std::vector<std::string>& problem_columns() {
  static const std::vector<std::string> v = {"op", "batch", "m", "n", "k", "dtype_a", "dtype_b",
                                             "dtype_out", "transpose_a", "transpose_b",
                                             "has_bias", "ld_a", "ld_b", "ld_out"};
  return v;
}

const std::vector<std::string>& config_columns() {
  static const std::vector<std::string> v = {"template_kind", "block_m", "block_n", "block_k",
                                             "group_m", "num_stages", "num_warps", "even_k",
                                             "allow_tf32", "use_fast_accum"};
  return v;
}

const std::vector<std::string>& hardware_columns() {
  static const std::vector<std::string> v = {"sm_count", "smem_per_block_bytes"};
  return v;
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> v = {"float32", "float16", "bfloat16", "float8_e4m3fn",
                                             "float8_e5m2", "int8", "int32", "float64"};
  return v;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> v = {"mm", "addmm", "bmm", "baddbmm"};
  return v;
}

const std::vector<std::string>& template_kind_names() {
  static const std::vector<std::string> v = {"aten_mm", "aten_addmm", "aten_bias_addmm",
                                             "triton_mm", "triton_tma", "decompose_k",
                                             "contiguous_mm", "cpp", "other"};
  return v;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> f = {
        // problem
        "log2_batch", "log2_m", "log2_n", "log2_k", "log2_flops", "log2_min_bytes",
        "log2_arith_intensity", "bytes_a", "bytes_b", "bytes_out", "dtype_is_fp32",
        "dtype_is_fp16", "dtype_is_bf16", "dtype_is_fp8", "transpose_a", "transpose_b",
        "align_a", "align_b", "align_out"};
    for (const auto& op : op_names()) f.push_back("op_is_" + op);
    f.push_back("has_bias");
    // config
    for (const auto& t : template_kind_names()) f.push_back("template_is_" + t);
    const char* cfg[] = {"is_tiled", "log2_block_m", "log2_block_n", "log2_block_k",
                         "log2_group_m", "num_stages", "num_warps", "even_k", "allow_tf32",
                         "use_fast_accum",
                         // problem x config
                         "log2_tiles_m", "log2_tiles_n", "log2_tiles_total", "log2_waves",
                         "wave_efficiency", "waste_m", "waste_n", "log2_k_iters", "waste_k",
                         "smem_per_stage_kib", "smem_total_kib", "smem_fraction", "smem_exceeds",
                         "log2_acc_regs_per_thread", "log2_tile_intensity",
                         "log2_flops_per_tile", "log2_tile_bytes_per_k_iter",
                         "log2_operand_regs_per_thread", "log2_regs_per_thread"};
    for (const char* c : cfg) f.emplace_back(c);
    return f;
  }();
  return v;
}

int num_features() { return static_cast<int>(feature_names().size()); }

TemplateKind template_kind(std::string_view id) {
  auto starts = [&](std::string_view p) { return id.substr(0, p.size()) == p; };
  if (id == "aten::mm" || id == "aten::bmm") return TemplateKind::aten_mm;
  if (id == "aten::addmm" || id == "aten::baddbmm") return TemplateKind::aten_addmm;
  if (id == "aten::bias_addmm") return TemplateKind::aten_bias_addmm;
  if (id.find("tma") != std::string_view::npos) return TemplateKind::triton_tma;
  if (starts("triton::")) return TemplateKind::triton_mm;
  if (id == "decompose_k") return TemplateKind::decompose_k;
  if (id == "contiguous_mm") return TemplateKind::contiguous_mm;
  if (starts("cpp::") || starts("cpp_")) return TemplateKind::cpp;
  if (starts("aten::")) return TemplateKind::aten_mm;
  return TemplateKind::other;
}

int dtype_bytes(int32_t code) {
  switch (static_cast<DType>(code)) {
    case DType::float32: return 4;
    case DType::float16: return 2;
    case DType::bfloat16: return 2;
    case DType::float8_e4m3fn: return 1;
    case DType::float8_e5m2: return 1;
    case DType::int8: return 1;
    case DType::int32: return 4;
    case DType::float64: return 8;
  }
  fail("unknown dtype code " + std::to_string(code));
}

int row_alignment_log2(int64_t leading_dim, int elem_bytes) {
  if (leading_dim < 1 || elem_bytes < 1) fail("row_alignment_log2: leading_dim and elem_bytes must be >= 1");
  const int64_t row_bytes = leading_dim * elem_bytes;
  int log2 = 0;
  while (log2 < 4 && row_bytes % (int64_t{2} << log2) == 0) ++log2;
  return log2;
}

void compute_features(std::span<const int64_t> problems, std::span<const int64_t> problem_index,
                      std::span<const int64_t> configs, std::span<const int64_t> hardware,
                      std::span<float> out) {
  const size_t nf = static_cast<size_t>(num_features());
  if (problems.empty() || problems.size() % kNumProblemColumns != 0)
    fail("problems must be a non-empty P x " + std::to_string(kNumProblemColumns) + " array");
  if (configs.size() % kNumConfigColumns != 0)
    fail("configs must be an N x " + std::to_string(kNumConfigColumns) + " array");
  if (hardware.size() != kNumHardwareColumns)
    fail("hardware must have " + std::to_string(kNumHardwareColumns) +
         " entries (sm_count, smem_per_block_bytes)");
  const size_t n_problems = problems.size() / kNumProblemColumns;
  const size_t rows = configs.size() / kNumConfigColumns;
  if (problem_index.size() != rows)
    fail("problem_index has " + std::to_string(problem_index.size()) + " entries, configs has " +
         std::to_string(rows) + " rows");
  if (out.size() != rows * nf) fail("output buffer has the wrong size");
  const int64_t sm_count = hardware[kHSmCount];
  const int64_t smem_limit = hardware[kHSmemPerBlockBytes];
  if (sm_count < 1) fail("hardware: sm_count must be >= 1, got " + std::to_string(sm_count));
  if (smem_limit < 1)
    fail("hardware: smem_per_block_bytes must be >= 1, got " + std::to_string(smem_limit));

  const auto& pcols = problem_columns();
  for (size_t p = 0; p < n_problems; ++p) {
    const int64_t* r = problems.data() + p * kNumProblemColumns;
    check_range(r[kPOp], 0, kNumOps - 1, "problems", p, pcols[kPOp]);
    for (int c : {kPBatch, kPM, kPN, kPK, kPLdA, kPLdB, kPLdOut})
      check_range(r[c], 1, kMaxDim, "problems", p, pcols[c]);
    for (int c : {kPDTypeA, kPDTypeB, kPDTypeOut})
      check_range(r[c], 0, kNumDTypes - 1, "problems", p, pcols[c]);
    for (int c : {kPTransposeA, kPTransposeB, kPHasBias})
      check_range(r[c], 0, 1, "problems", p, pcols[c]);
  }
  const auto& ccols = config_columns();
  for (size_t i = 0; i < rows; ++i) {
    const int64_t* c = configs.data() + i * kNumConfigColumns;
    check_range(problem_index[i], 0, static_cast<int64_t>(n_problems) - 1, "problem_index", i,
                "index");
    check_range(c[kCTemplateKind], 0, kNumTemplateKinds - 1, "configs", i, ccols[kCTemplateKind]);
    const bool tiled = c[kCBlockM] > 0;
    for (int col : {kCBlockM, kCBlockN, kCBlockK, kCGroupM, kCNumStages, kCNumWarps})
      check_range(c[col], tiled ? 1 : 0, 1 << 16, "configs", i, ccols[col]);
    for (int col : {kCEvenK, kCAllowTF32, kCUseFastAccum})
      check_range(c[col], 0, 1, "configs", i, ccols[col]);
  }

  for (size_t i = 0; i < rows; ++i) {
    const int64_t* p = problems.data() + problem_index[i] * kNumProblemColumns;
    const int64_t* c = configs.data() + i * kNumConfigColumns;
    float* f = out.data() + i * nf;
    size_t j = 0;

    const double B = p[kPBatch], M = p[kPM], N = p[kPN], K = p[kPK];
    const int ba = dtype_bytes(static_cast<int32_t>(p[kPDTypeA]));
    const int bb = dtype_bytes(static_cast<int32_t>(p[kPDTypeB]));
    const int bo = dtype_bytes(static_cast<int32_t>(p[kPDTypeOut]));
    const double flops = 2.0 * B * M * N * K;
    const double bytes = B * (M * K * ba + K * N * bb + M * N * bo);
    const auto dt = static_cast<DType>(p[kPDTypeA]);
    f[j++] = lg(B);
    f[j++] = lg(M);
    f[j++] = lg(N);
    f[j++] = lg(K);
    f[j++] = lg(flops);
    f[j++] = lg(bytes);
    f[j++] = lg(flops / bytes);
    f[j++] = static_cast<float>(ba);
    f[j++] = static_cast<float>(bb);
    f[j++] = static_cast<float>(bo);
    f[j++] = dt == DType::float32 ? 1.f : 0.f;
    f[j++] = dt == DType::float16 ? 1.f : 0.f;
    f[j++] = dt == DType::bfloat16 ? 1.f : 0.f;
    f[j++] = (dt == DType::float8_e4m3fn || dt == DType::float8_e5m2) ? 1.f : 0.f;
    f[j++] = static_cast<float>(p[kPTransposeA]);
    f[j++] = static_cast<float>(p[kPTransposeB]);
    f[j++] = static_cast<float>(row_alignment_log2(p[kPLdA], ba));
    f[j++] = static_cast<float>(row_alignment_log2(p[kPLdB], bb));
    f[j++] = static_cast<float>(row_alignment_log2(p[kPLdOut], bo));
    for (int op = 0; op < kNumOps; ++op) f[j++] = p[kPOp] == op ? 1.f : 0.f;
    f[j++] = static_cast<float>(p[kPHasBias]);

    for (int t = 0; t < kNumTemplateKinds; ++t) f[j++] = c[kCTemplateKind] == t ? 1.f : 0.f;
    const int64_t bm = c[kCBlockM], bn = c[kCBlockN], bk = c[kCBlockK];
    if (bm > 0) {
      const int64_t warps = c[kCNumWarps], stages = c[kCNumStages];
      const int64_t tiles_m = ceil_div(p[kPM], bm), tiles_n = ceil_div(p[kPN], bn);
      const double tiles = B * static_cast<double>(tiles_m) * static_cast<double>(tiles_n);
      const double waves = tiles / static_cast<double>(sm_count);
      const double full_waves = std::ceil(waves);
      const int64_t k_iters = ceil_div(p[kPK], bk);
      const double smem_stage = static_cast<double>(bm * bk * ba + bk * bn * bb);
      const double smem_total = smem_stage * static_cast<double>(stages);
      f[j++] = 1.f;
      f[j++] = lg(bm);
      f[j++] = lg(bn);
      f[j++] = lg(bk);
      f[j++] = lg(c[kCGroupM]);
      f[j++] = static_cast<float>(stages);
      f[j++] = static_cast<float>(warps);
      f[j++] = static_cast<float>(c[kCEvenK]);
      // TF32 changes only fp32 dots; Inductor sets ALLOW_TF32 for half precision too (whenever
      // tf32 is on and the GEMM is large), where the kernel is the same.
      f[j++] = c[kCAllowTF32] != 0 && dt == DType::float32 ? 1.f : 0.f;
      f[j++] = static_cast<float>(c[kCUseFastAccum]);
      f[j++] = lg(tiles_m);
      f[j++] = lg(tiles_n);
      f[j++] = lg(tiles);
      f[j++] = lg(waves);
      f[j++] = static_cast<float>(waves / full_waves);
      f[j++] = static_cast<float>(1.0 - M / static_cast<double>(tiles_m * bm));
      f[j++] = static_cast<float>(1.0 - N / static_cast<double>(tiles_n * bn));
      f[j++] = lg(k_iters);
      f[j++] = static_cast<float>(1.0 - K / static_cast<double>(k_iters * bk));
      f[j++] = static_cast<float>(smem_stage / 1024.0);
      f[j++] = static_cast<float>(smem_total / 1024.0);
      f[j++] = static_cast<float>(smem_total / static_cast<double>(smem_limit));
      f[j++] = smem_total > static_cast<double>(smem_limit) ? 1.f : 0.f;
      f[j++] = lg(static_cast<double>(bm * bn) / static_cast<double>(warps * 32));
      f[j++] = lg(static_cast<double>(bm * bn) / static_cast<double>(bm + bn));
      f[j++] = lg(2.0 * static_cast<double>(bm) * static_cast<double>(bn) * K);
      f[j++] = lg(smem_stage);
      // 32-bit registers per thread for one K step of the operand tiles, and with the fp32
      // accumulator: past ~255 the kernel spills (128x64x256 with 4 warps ran 8x slower than
      // cuBLAS on an H100; 32x256x128 with 2 warps 350x).
      const double threads = static_cast<double>(warps * 32);
      const double operand_regs = smem_stage / (4.0 * threads);
      f[j++] = lg(operand_regs);
      f[j++] = lg(operand_regs + static_cast<double>(bm * bn) / threads);
    } else {
      // Not tiled (ATen/cuBLAS, ...): every block-derived feature is zero; the template one-hot
      // and the problem features carry the information.
      for (int k = 0; k < 29; ++k) f[j++] = 0.f;
    }
    if (j != nf) fail("internal error: feature count mismatch");
  }
}

}  // namespace diode
