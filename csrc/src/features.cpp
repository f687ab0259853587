#include "diode/features.h"

#include <algorithm>
#include <bit>
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
    fail(std::string(table) + " row " + std::to_string(row) + ": column '" + column + "' is " +
         std::to_string(value) + ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
  }
}

constexpr int64_t kMaxDim = int64_t{1} << 40;

// The features of the problem alone (kFLog2Batch to kFHasBias, the first of a row) of problem row
// `p`.
static_assert(kFLog2Batch == 0);
void write_problem_features(const int64_t* p, float* f) {
  const double B = p[kPBatch], M = p[kPM], N = p[kPN], K = p[kPK];
  const int ba = dtype_bytes(static_cast<int32_t>(p[kPDTypeA]));
  const int bb = dtype_bytes(static_cast<int32_t>(p[kPDTypeB]));
  const int bo = dtype_bytes(static_cast<int32_t>(p[kPDTypeOut]));
  const auto dt = static_cast<DType>(p[kPDTypeA]);
  const double flops = 2.0 * B * M * N * K;
  const double bytes = B * (M * K * ba + K * N * bb + M * N * bo);
  f[kFLog2Batch] = lg(B);
  f[kFLog2M] = lg(M);
  f[kFLog2N] = lg(N);
  f[kFLog2K] = lg(K);
  f[kFLog2Flops] = lg(flops);
  f[kFLog2MinBytes] = lg(bytes);
  f[kFLog2ArithIntensity] = lg(flops / bytes);
  f[kFBytesA] = static_cast<float>(ba);
  f[kFBytesB] = static_cast<float>(bb);
  f[kFBytesOut] = static_cast<float>(bo);
  f[kFDTypeIsFp32] = dt == DType::float32 ? 1.f : 0.f;
  f[kFDTypeIsFp16] = dt == DType::float16 ? 1.f : 0.f;
  f[kFDTypeIsBf16] = dt == DType::bfloat16 ? 1.f : 0.f;
  f[kFDTypeIsFp8] = (dt == DType::float8_e4m3fn || dt == DType::float8_e5m2) ? 1.f : 0.f;
  f[kFTransposeA] = static_cast<float>(p[kPTransposeA]);
  f[kFTransposeB] = static_cast<float>(p[kPTransposeB]);
  f[kFAlignA] = static_cast<float>(row_alignment_log2(p[kPLdA], ba));
  f[kFAlignB] = static_cast<float>(row_alignment_log2(p[kPLdB], bb));
  f[kFAlignOut] = static_cast<float>(row_alignment_log2(p[kPLdOut], bo));
  for (int op = 0; op < kNumOps; ++op) f[kFOpIsMm + op] = p[kPOp] == op ? 1.f : 0.f;
  f[kFHasBias] = static_cast<float>(p[kPHasBias]);
}

}  // namespace

const std::vector<std::string>& problem_columns() {
  static const std::vector<std::string> v = {
      "op",        "batch",       "m",           "n",        "k",    "dtype_a", "dtype_b",
      "dtype_out", "transpose_a", "transpose_b", "has_bias", "ld_a", "ld_b",    "ld_out"};
  return v;
}

const std::vector<std::string>& config_columns() {
  static const std::vector<std::string> v = {
      "template_kind", "block_m", "block_n",    "block_k",        "group_m", "num_stages",
      "num_warps",     "even_k",  "allow_tf32", "use_fast_accum", "k_split"};
  return v;
}

const std::vector<std::string>& hardware_columns() {
  static const std::vector<std::string> v = {"sm_count", "smem_per_block_bytes"};
  return v;
}

namespace {
template <size_t N>
std::vector<std::string> strings(const std::array<std::string_view, N>& names) {
  return {names.begin(), names.end()};
}
}  // namespace

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> v = strings(kDTypeNames);
  return v;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> v = strings(kOpNames);
  return v;
}

const std::vector<std::string>& template_kind_names() {
  static const std::vector<std::string> v = strings(kTemplateKindNames);
  return v;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const auto& spec : kFeatures) names.emplace_back(spec.name);
    return names;
  }();
  return v;
}

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
    case DType::float32:
      return 4;
    case DType::float16:
      return 2;
    case DType::bfloat16:
      return 2;
    case DType::float8_e4m3fn:
      return 1;
    case DType::float8_e5m2:
      return 1;
    case DType::int8:
      return 1;
    case DType::int32:
      return 4;
    case DType::float64:
      return 8;
  }
  fail("unknown dtype code " + std::to_string(code));
}

int row_alignment_log2(int64_t leading_dim, int elem_bytes) {
  if (leading_dim < 1 || elem_bytes < 1)
    fail("row_alignment_log2: leading_dim and elem_bytes must be >= 1");
  // The power of two dividing leading_dim * elem_bytes, counted without the product (which can
  // overflow): its trailing zero bits are those of the two factors together.
  const int zeros = std::countr_zero(static_cast<uint64_t>(leading_dim)) +
                    std::countr_zero(static_cast<uint32_t>(elem_bytes));
  return std::min(zeros, 4);
}

void compute_features(std::span<const int64_t> problems, std::span<const int64_t> problem_index,
                      std::span<const int64_t> configs, std::span<const int64_t> hardware,
                      std::span<float> out) {
  constexpr size_t nf = kNumFeatures;
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
    check_range(c[kCKSplit], 0, kMaxDim, "configs", i, ccols[kCKSplit]);
  }

  for (size_t i = 0; i < rows; ++i) {
    const int64_t* p = problems.data() + problem_index[i] * kNumProblemColumns;
    const int64_t* c = configs.data() + i * kNumConfigColumns;
    float* f = out.data() + i * nf;

    const double B = p[kPBatch], M = p[kPM], N = p[kPN], K = p[kPK];
    const int ba = dtype_bytes(static_cast<int32_t>(p[kPDTypeA]));
    const int bb = dtype_bytes(static_cast<int32_t>(p[kPDTypeB]));
    const auto dt = static_cast<DType>(p[kPDTypeA]);
    // the problem's own features (kFLog2Batch to kFHasBias): those of the row before where it
    // is of the same problem (a GEMM's candidates are rows of one problem)
    if (i > 0 && problem_index[i] == problem_index[i - 1]) {
      std::copy(f - nf, f - nf + kFHasBias + 1, f);
    } else {
      write_problem_features(p, f);
    }

    for (int t = 0; t < kNumTemplateKinds; ++t)
      f[kFTemplateIsAtenMm + t] = c[kCTemplateKind] == t ? 1.f : 0.f;
    // TF32 changes only fp32 dots; Inductor sets ALLOW_TF32 for half precision too (whenever tf32
    // is on and the GEMM is large), where the kernel is the same. An ATen choice carries it where
    // cuBLAS may run TF32 kernels (inductor.config_space.aten_allows_tf32).
    f[kFAllowTf32] = c[kCAllowTF32] != 0 && dt == DType::float32 ? 1.f : 0.f;
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
      f[kFIsTiled] = 1.f;
      f[kFLog2BlockM] = lg(bm);
      f[kFLog2BlockN] = lg(bn);
      f[kFLog2BlockK] = lg(bk);
      f[kFLog2GroupM] = lg(c[kCGroupM]);
      f[kFNumStages] = static_cast<float>(stages);
      f[kFNumWarps] = static_cast<float>(warps);
      f[kFEvenK] = static_cast<float>(c[kCEvenK]);
      f[kFUseFastAccum] = static_cast<float>(c[kCUseFastAccum]);
      f[kFLog2TilesM] = lg(tiles_m);
      f[kFLog2TilesN] = lg(tiles_n);
      f[kFLog2TilesTotal] = lg(tiles);
      f[kFLog2Waves] = lg(waves);
      f[kFWaveEfficiency] = static_cast<float>(waves / full_waves);
      f[kFWasteM] = static_cast<float>(1.0 - M / static_cast<double>(tiles_m * bm));
      f[kFWasteN] = static_cast<float>(1.0 - N / static_cast<double>(tiles_n * bn));
      f[kFLog2KIters] = lg(k_iters);
      f[kFWasteK] = static_cast<float>(1.0 - K / static_cast<double>(k_iters * bk));
      f[kFSmemPerStageKib] = static_cast<float>(smem_stage / 1024.0);
      f[kFSmemTotalKib] = static_cast<float>(smem_total / 1024.0);
      f[kFSmemFraction] = static_cast<float>(smem_total / static_cast<double>(smem_limit));
      f[kFSmemExceeds] = smem_total > static_cast<double>(smem_limit) ? 1.f : 0.f;
      f[kFLog2AccRegsPerThread] =
          lg(static_cast<double>(bm * bn) / static_cast<double>(warps * 32));
      f[kFLog2TileIntensity] = lg(static_cast<double>(bm * bn) / static_cast<double>(bm + bn));
      f[kFLog2FlopsPerTile] = lg(2.0 * static_cast<double>(bm) * static_cast<double>(bn) * K);
      f[kFLog2TileBytesPerKIter] = lg(smem_stage);
      // 32-bit registers per thread for one K step of the operand tiles, and with the fp32
      // accumulator: past ~255 the kernel spills registers.
      const double threads = static_cast<double>(warps * 32);
      const double operand_regs = smem_stage / (4.0 * threads);
      f[kFLog2OperandRegsPerThread] = lg(operand_regs);
      f[kFLog2RegsPerThread] = lg(operand_regs + static_cast<double>(bm * bn) / threads);
      const auto loads = [&](int64_t tile_elems, int64_t ld, int elem_bytes, int loads_col,
                             int sub_word_col) {
        const int vector_bytes = 1 << row_alignment_log2(ld, elem_bytes);
        const double vector_elems = std::max(1.0, static_cast<double>(vector_bytes) / elem_bytes);
        const double per_thread = static_cast<double>(tile_elems) / (threads * vector_elems);
        f[loads_col] = static_cast<float>(std::log2(std::max(per_thread, 1.0)));
        f[sub_word_col] = vector_bytes < 4 ? 1.f : 0.f;
      };
      loads(bm * bk, p[kPLdA], ba, kFLog2LoadsPerThreadA, kFSubWordLoadsA);
      loads(bk * bn, p[kPLdB], bb, kFLog2LoadsPerThreadB, kFSubWordLoadsB);
    } else {
      // Not tiled (ATen/cuBLAS, ...): every block-derived feature is zero but TF32 (set above);
      // the template one-hot and the problem features carry the information.
      const float tf32 = f[kFAllowTf32];
      std::fill(f + kFIsTiled, f + kNumFeatures, 0.f);
      f[kFAllowTf32] = tf32;
    }
    const int64_t split = c[kCKSplit];
    f[kFLog2KSplit] = split > 0 ? lg(split) : 0.f;
    f[kFLog2KPerSplit] = split > 0 ? lg(ceil_div(p[kPK], split)) : 0.f;
    // fp32 partial sums of the bmm: written once, read once by the reduction
    f[kFLog2SplitPartialBytes] = split > 0 ? lg(4.0 * B * static_cast<double>(split) * M * N) : 0.f;
  }
}

}  // namespace diode
