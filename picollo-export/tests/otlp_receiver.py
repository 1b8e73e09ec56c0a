"""A local OTLP/HTTP metrics receiver for the tests: decodes each request with the official
OpenTelemetry protobuf bindings (protobuf or JSON body, as OTLP/HTTP allows) and writes it
as JSON to OUT_DIR/request-N.json. POSTs to /reject answer HTTP 400.

Usage: python3 otlp_receiver.py PORT OUT_DIR
"""
import http.server
import os
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as service

port, out_dir = int(sys.argv[1]), sys.argv[2]
count = 0


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/reject":
            self.send_response(400)
            self.end_headers()
            self.wfile.write(b"rejected on purpose")
            return
        request = service.ExportMetricsServiceRequest()
        try:
            if self.headers.get("Content-Type", "").startswith("application/json"):
                json_format.Parse(body.decode("utf-8"), request)
            else:
                request.ParseFromString(body)
        except Exception as e:  # a decoding failure is what the test looks for
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(e).encode())
            return
        count += 1
        path = os.path.join(out_dir, "request-%d.json" % count)
        with open(path + ".tmp", "w") as f:
            f.write(json_format.MessageToJson(request))
        os.rename(path + ".tmp", path)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(service.ExportMetricsServiceResponse().SerializeToString())

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", port), Handler)
print("ready", flush=True)
server.serve_forever()
