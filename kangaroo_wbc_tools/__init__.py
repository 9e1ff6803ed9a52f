"""kangaroo_wbc's tools: the `kangaroo-wbc` command line, the one-process loop (demo, soak, evaluate), the
node-graph runner and the benchmark. They drive the runtime package (:mod:`kangaroo_wbc`), which never
imports them."""
