"""The only code that touches torch._inductor internals: Inductor's IR nodes and template choices
to Problem/KernelConfig (:mod:`.convert`), the config space Inductor generates (:mod:`.config_space`),
its GEMM candidates for the handler (:mod:`.candidates`), and installing choice handlers and
feedback savers (:mod:`.hooks`). Collection and integration both use it."""
