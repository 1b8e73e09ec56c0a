# perf, for picollo-cli/tests/perf_stat.rs: `picollo stat` and `perf stat` count the same
# workload and must agree (page faults, context switches, with and without the kernel). Debian's
# linux-perf; the test fails under CI without it. About 10 s.
apt_install linux-perf
