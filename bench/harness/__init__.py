"""The benchmarks' harness: what every scenario under bench/ shares, and nothing that knows a
scenario.

- `phases`: progress on stderr, a deadline per phase, a failed phase recorded instead of
  ending the run, stdout kept for the results;
- `stats`: the one notion of a spread (median, range, (max - min) / median) and of a
  percentile (nearest rank);
- `pairs`: interleaved pairs of runs (A B A B ...) and a pair's ratio (the median of the
  per-pair ratios);
- `table`: a result `Row` and the one way to render rows, as text or as Markdown;
- `machine`: the machine's limits and figures (loopback TCP, disk, wake cost, CPU speed,
  cores, memory, kernel);
- `results_file`: each scenario's results written as JSON to bench/results/, with the date,
  the machine's figures and the git commit; `results_page` renders bench/RESULTS.md from them.

The scenarios (bench/produce_consume.py, replication.py, density.py, groups.py,
log_engine.py, spark.py) run as scripts from bench/, so this package imports as `harness`.
"""
