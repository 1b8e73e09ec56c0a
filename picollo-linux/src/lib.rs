//! Picollo on Linux: `perf_event_open` counters with the rdpmc fast path, shared-memory
//! frame rings and spans with counters.

