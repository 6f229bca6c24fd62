"""Process plumbing, private to privbench and its built-in plugins: signals and plugin
aborts (``abort``), BLAS threads (``blas``), CPU clocks that count helper processes
(``clock``), strict boolean environment variables (``env``), worker taint (``taint``),
growing buffers (``buffers``) and writing only what privbench owns in a user's folder
(``outdir``). No stability promise to third-party plugins: they use ``privbench`` and
``privbench.protocol``.
"""
