# Prometheus for picollo-export's tests against a real server (tests/prometheus.rs), and its
# promtool for the OpenMetrics backfill test of `picollo export`. Debian's package (2.42 on
# bookworm); the tests detect the version and enable native histograms accordingly.
# Python's official OTLP protobuf bindings decode what the OTLP exporter sends
# (picollo-export/tests/otlp_receiver.rs).
apt_install prometheus python3-pip
python3 -c 'import opentelemetry.proto' 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check opentelemetry-proto ||
  python3 -m pip install --quiet --disable-pip-version-check --break-system-packages opentelemetry-proto
