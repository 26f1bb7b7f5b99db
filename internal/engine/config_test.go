package engine

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testDefaults is the engine's part of the input's default config, as the
// plugin parses it from a config with only the required fields
// (plugin's TestEngineConfigDefaults pins the same values from its side).
var testDefaults = Config{
	ClientID:               "watermark-connect",
	SessionTimeout:         time.Minute,
	RebalanceTimeout:       45 * time.Second,
	BatchMaxRecords:        1024,
	BatchMaxBytes:          1 << 20,
	MaxPending:             1024,
	CommitPeriod:           time.Second,
	CommitMetadata:         true,
	CommitMetadataMaxBytes: 4000,
	NackBackoff:            500 * time.Millisecond,
	NackMaxBackoff:         10 * time.Second,
	StallReplayAfter:       time.Minute,
	MaxAttempts:            5,
	MaxHeldRecords:         10000,
	DeadLetterReportFor:    24 * time.Hour,
	DrainTimeout:           10 * time.Second,
	LostReportFor:          24 * time.Hour,
	TopicLagRefresh:        5 * time.Second,
	MetadataMaxAge:         5 * time.Minute,
}

// testConfig returns testDefaults with extra on top: "field: value" lines
// of the input's YAML, for the fields the engine reads (nack_retry as a flow
// map on one line). An unknown field or a bad value fails the test.
func testConfig(t testing.TB, extra string) *Config {
	t.Helper()
	c := testDefaults
	for line := range strings.SplitSeq(extra, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("testConfig: %q is not a field: value line", line)
		}
		if err := setField(&c, strings.TrimSpace(key), strings.TrimSpace(value)); err != nil {
			t.Fatalf("testConfig: %s: %v", line, err)
		}
	}
	return &c
}

// setField sets the engine field the input's field key maps to.
func setField(c *Config, key, value string) error {
	var err error
	atoi := func(dst *int) {
		if err == nil {
			*dst, err = strconv.Atoi(value)
		}
	}
	dur := func(dst *time.Duration) {
		if err == nil {
			*dst, err = time.ParseDuration(value)
		}
	}
	switch key {
	case "batch_max_records":
		atoi(&c.BatchMaxRecords)
	case "max_pending_batches":
		atoi(&c.MaxPending)
	case "commit_metadata_max_bytes":
		atoi(&c.CommitMetadataMaxBytes)
	case "commit_period":
		dur(&c.CommitPeriod)
	case "drain_timeout":
		dur(&c.DrainTimeout)
	case "stall_replay_after":
		dur(&c.StallReplayAfter)
	case "session_timeout":
		dur(&c.SessionTimeout)
	case "topic_lag_refresh_period":
		dur(&c.TopicLagRefresh)
	case "lost_records_report_for":
		dur(&c.LostReportFor)
	case "ordering":
		switch value {
		case "key":
			c.OrderingKey = true
		case "none":
			c.OrderingKey = false
		default:
			err = fmt.Errorf("ordering %q", value)
		}
	case "max_held_records":
		atoi(&c.MaxHeldRecords)
	case "commit_metadata":
		c.CommitMetadata, err = strconv.ParseBool(value)
	case "group_protocol":
		c.ConsumerProtocol = value == "consumer"
	case "nack_retry", "dead_letter":
		// A flow map on one line: each entry is the field key.entry.
		inner := strings.TrimSuffix(strings.TrimPrefix(value, "{"), "}")
		for kv := range strings.SplitSeq(inner, ",") {
			k, v, _ := strings.Cut(kv, ":")
			if err := setField(c, key+"."+strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
				return err
			}
		}
	case "nack_retry.max_retries":
		atoi(&c.NackRetries)
	case "nack_retry.initial_backoff":
		dur(&c.NackBackoff)
	case "nack_retry.max_backoff":
		dur(&c.NackMaxBackoff)
	case "dead_letter.max_attempts":
		atoi(&c.MaxAttempts)
	case "dead_letter.report_for":
		dur(&c.DeadLetterReportFor)
	default:
		return fmt.Errorf("no engine field for %q", key)
	}
	return err
}

// The parser itself: every field it knows, and an unknown one refused.
func TestTestConfig(t *testing.T) {
	c := testConfig(t, "batch_max_records: 7\ngroup_protocol: consumer\nnack_retry: { max_retries: -1, initial_backoff: 1s, max_backoff: 2s }\ncommit_metadata: false\n")
	if c.BatchMaxRecords != 7 || !c.ConsumerProtocol || c.NackRetries != -1 || c.NackBackoff != time.Second || c.NackMaxBackoff != 2*time.Second || c.CommitMetadata {
		t.Fatalf("testConfig = %+v", *c)
	}
	if err := setField(&Config{}, "seed_brokers", "x"); err == nil {
		t.Fatal("setField(seed_brokers) = nil, want an error")
	}
	if err := setField(&Config{}, "nack_retry", "{ max_tries: 3 }"); err == nil {
		t.Fatal("setField(nack_retry.max_tries) = nil, want an error")
	}
	c = testConfig(t, "dead_letter: { max_attempts: 2, report_for: 1h }\n")
	if c.MaxAttempts != 2 || c.DeadLetterReportFor != time.Hour {
		t.Fatalf("testConfig = %+v", *c)
	}
}
