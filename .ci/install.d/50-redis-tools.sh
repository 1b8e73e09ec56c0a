# redis-tools, for redis-benchmark: the load of the resp_server and tokio_server benches (the
# benchmark step runs them once; under CI a missing redis-benchmark fails them). About 5 s.
apt_install redis-tools
