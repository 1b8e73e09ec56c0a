//! Shared workload data for the Picollo benchmarks.
