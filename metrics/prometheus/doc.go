// Package prometheus provides a Benthos metrics exporter, registered under the
// name "prometheus", that exposes every metric emitted by a stream (Benthos's
// own input_received, output_sent, *_latency_ns and friends, as well as custom
// plugin metrics) in the Prometheus text exposition format.
//
// Benthos core ships no Prometheus exporter, so importing this package (even
// blank, `_ "github.com/watermark-connect/watermark-connect/metrics/prometheus"`)
// registers it on the global environment, after which a config such as
//
//	http:
//	  address: 0.0.0.0:4195
//	metrics:
//	  prometheus: {}
//
// serves the metrics at /metrics (and its alias /stats) on Benthos's own HTTP
// server. The exporter itself never listens on a port: Benthos asks it for an
// http.HandlerFunc and mounts that handler on the server configured under
// `http`. Note that streams built with service.NewStreamBuilder have that
// server disabled by default (`http.enabled: false`), so such streams need
// either `http.enabled: true` or StreamBuilder.SetHTTPMux.
//
// Every exporter instance owns a private prometheus.Registry rather than the
// process-wide default registry, so several streams (or tests) in one process
// never see each other's series or collide on registration.
//
// Concurrency: an *Exporter and every metric it hands out are safe for
// concurrent use by multiple goroutines, which Benthos relies on since
// components create and update metrics from their own goroutines.
package prometheus
