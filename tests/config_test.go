package tests

import (
	"fmt"
	"strings"
)

// pipeline describes one watermark-connect config: the kafka_watermark input,
// a mapping that renders each record's topic, partition, offset and value as
// JSON, an archive that turns each batch into one JSON array, and an
// http_client output to the test's sink that never retries (so an HTTP 500
// is a nack that reaches the input).
type pipeline struct {
	brokers  string
	topic    string
	group    string
	sinkURL  string
	instance string // client_id suffix and X-Instance header
	protocol string // group_protocol; classic when empty
	// input holds extra kafka_watermark fields, as YAML at column 0.
	input    string
	logLevel string // INFO when empty
	threads  int    // pipeline threads; 4 when 0
	inFlight int    // http_client max_in_flight; 32 when 0
}

func (c pipeline) yaml() string {
	level := c.logLevel
	if level == "" {
		level = "INFO"
	}
	protocol := c.protocol
	if protocol == "" {
		protocol = "classic"
	}
	threads := c.threads
	if threads == 0 {
		threads = 4
	}
	inFlight := c.inFlight
	if inFlight == 0 {
		inFlight = 32
	}
	instance := c.instance
	if instance == "" {
		instance = "main"
	}
	var seeds []string
	for _, b := range strings.Split(c.brokers, ",") {
		seeds = append(seeds, fmt.Sprintf("%q", b))
	}
	return fmt.Sprintf(`http:
  enabled: false
logger:
  level: %s
  format: logfmt
  add_timestamp: true
shutdown_timeout: 30s
input:
  kafka_watermark:
    seed_brokers: [ %s ]
    topics: [ %q ]
    consumer_group: %q
    client_id: %q
    group_protocol: %s
%s
pipeline:
  threads: %d
  processors:
    - mapping: |
        root = {"t": @kafka_topic, "p": @kafka_partition, "o": @kafka_offset, "v": content().string()}
    - archive:
        format: json_array
output:
  http_client:
    url: %q
    verb: POST
    headers:
      Content-Type: application/json
      X-Instance: %q
    retries: 0
    timeout: 20s
    max_in_flight: %d
`, level, strings.Join(seeds, ", "), c.topic, c.group, "wm-e2e-"+instance, protocol,
		indent(c.input, 4), threads, c.sinkURL, instance, inFlight)
}
