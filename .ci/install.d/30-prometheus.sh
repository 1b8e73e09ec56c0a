# Prometheus for picollo-export's tests against a real server (tests/prometheus.rs) and its
# promtool for the OpenMetrics backfill test of `picollo export` (Debian's package: 2.42 on
# bookworm; the tests detect the version and enable native histograms accordingly), and the
# official OpenTelemetry protobuf bindings for Python, which decode what the OTLP exporter
# sends (picollo-export/tests/otlp_receiver.rs).
apt_install prometheus
if ! python3 -c 'import opentelemetry.proto' 2>/dev/null; then
  command -v python3 >/dev/null 2>&1 || apt_install python3 python3-pip
  python3 -m pip install --quiet --disable-pip-version-check opentelemetry-proto 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages opentelemetry-proto
fi
