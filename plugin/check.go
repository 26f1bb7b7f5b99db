package plugin

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// Field checks: what one field's value alone must satisfy. They are the one
// place these rules live, and both lint and start run them:
//
//   - at start, parseConfig runs every check on its field's value (as written,
//     or its default) before it reads the config, and stops there if any fails;
//   - at lint, each checked field's own LintRule calls the same check on the
//     value as written (lint.go), so the error is reported at the field's line.
//
// Rules that relate two fields (drain_timeout below rebalance_timeout, a
// dead-letter topic this input consumes) are validate's; lint runs validate
// too, through the spec's lint rule, which can only point at the input's line.
//
// Every message names the field, the value and what is allowed.

// fieldCheck checks the value v of the field at path (dotted).
type fieldCheck func(path string, v any) error

// fieldChecks holds every field check, by the field's dotted path.
var fieldChecks = map[string]fieldCheck{
	fieldSeedBrokers:   checkBrokers(msgNoBrokers),
	fieldConsumerGroup: checkNotEmpty(msgNoGroup),

	fieldStartOffset:    checkOneOf(startEarliest, startLatest, startCommitted),
	fieldIsolationLevel: checkOneOf(isolationUncommitted, isolationCommitted),
	fieldGroupProtocol:  checkOneOf(protocolClassic, protocolConsumer),
	fieldOrdering:       checkOneOf(orderingNone, orderingKey),

	fieldSessionTimeout:                              checkPositive,
	fieldRebalanceTimeout:                            checkPositive,
	fieldHeartbeatInterval:                           checkPositive,
	fieldFetchMaxWait:                                checkPositive,
	fieldMetadataMaxAge:                              checkPositive,
	fieldTopicLagRefreshPeriod:                       checkPositive,
	fieldCommitPeriod:                                checkPositive,
	fieldTransactionTimeout:                          checkDurationBetween(time.Second, 15*time.Minute),
	fieldDrainTimeout:                                checkPositive,
	fieldNackRetry + "." + fieldNackInitialBack:      checkPositive,
	fieldNackRetry + "." + fieldNackMaxBack:          checkPositive,
	fieldRequestTimeoutOverhead:                      checkDurationBetween(100*time.Millisecond, 15*time.Minute),
	fieldConnIdleTimeout:                             checkDurationBetween(100*time.Millisecond, 15*time.Minute),
	fieldStallReplayAfter:                            checkNotNegative("0s (never replay in place) or positive"),
	fieldLostRecordsReportFor:                        checkNotNegative("0s (carry no loss in commits) or positive"),
	fieldDeadLetter + "." + fieldDeadLetterReportFor: checkNotNegative("0s (carry nothing) or positive"),

	fieldMaxPendingBatches:                      checkAtLeast(1, "at least 1"),
	fieldUnordered + "." + fieldCheckpointLimit: checkAtLeast(1, "at least 1"),
	fieldBatchMaxRecords:                        checkAtLeast(1, "at least 1"),
	fieldMaxHeldRecords:                         checkAtLeast(1, "at least 1"),
	fieldNackRetry + "." + fieldNackMaxRetries:  checkAtLeast(-1, "-1 (unlimited) or at least 0"),
	// At least 1 only when dead_letter.topic is set: validate's.
	fieldDeadLetter + "." + fieldDeadLetterMaxAttempts: checkAtLeast(math.MinInt, ""),
	fieldCommitMetadataMaxBytes:                        checkCommitMetadataBytes,

	fieldBatchMaxBytes:          checkByteSize,
	fieldMaxYieldBatchBytes:     checkByteSize,
	fieldFetchMaxBytes:          checkByteSize,
	fieldFetchMaxPartitionBytes: checkByteSize,
	fieldFetchMinBytes:          checkByteSize,
}

// requiredFields are checked when absent too (with a nil value): Benthos
// fills in neither, and lint requires only scalar fields by itself.
var requiredFields = map[string]bool{fieldSeedBrokers: true, fieldConsumerGroup: true}

// fieldError is a field check's error. Lint reports it at the field's line
// when the field is written, so the spec's lint rule leaves those out.
type fieldError struct {
	path string
	error
}

func (e fieldError) Unwrap() error { return e.error }

// checkFields runs every check of checks on its field's value in pc; a
// field of required is checked when absent too, with a nil value.
func checkFields(pc *service.ParsedConfig, checks map[string]fieldCheck, required map[string]bool) []error {
	var errs []error
	for path, check := range checks {
		p := strings.Split(path, ".")
		var v any
		var err error
		switch {
		case pc.Contains(p...):
			v, err = pc.FieldAny(p...)
		case !required[path]:
			continue
		}
		if err == nil {
			err = check(path, v)
		}
		if err != nil {
			errs = append(errs, fieldError{path, err})
		}
	}
	return errs
}

// durationOf reads a duration as Benthos does (time.ParseDuration).
func durationOf(path string, v any) (time.Duration, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%s (%v) is not a duration: write it with its unit, such as 500ms, 5s or 1m30s", path, v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s (%q) is not a duration: write it with its unit, such as 500ms, 5s or 1m30s", path, s)
	}
	return d, nil
}

// intOf reads a whole number, as YAML gives it.
func intOf(path string, v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case uint64:
		if n <= math.MaxInt {
			return int(n), nil
		}
	case float64:
		if n == math.Trunc(n) && math.Abs(n) <= math.MaxInt32 {
			return int(n), nil
		}
	case string:
		return 0, fmt.Errorf("%s (%q) is not a whole number", path, n)
	}
	return 0, fmt.Errorf("%s (%v) is not a whole number", path, v)
}

func checkPositive(path string, v any) error {
	d, err := durationOf(path, v)
	if err == nil && d <= 0 {
		err = fmt.Errorf("%s (%v) must be positive", path, d)
	}
	return err
}

func checkNotNegative(allowed string) fieldCheck {
	return func(path string, v any) error {
		d, err := durationOf(path, v)
		if err == nil && d < 0 {
			err = fmt.Errorf("%s (%v) must be %s", path, d, allowed)
		}
		return err
	}
}

func checkDurationBetween(lo, hi time.Duration) fieldCheck {
	return func(path string, v any) error {
		d, err := durationOf(path, v)
		if err == nil && (d < lo || d > hi) {
			err = fmt.Errorf("%s (%v) must be between %v and %v", path, d, lo, strings.TrimSuffix(hi.String(), "0s"))
		}
		return err
	}
}

func checkAtLeast(lo int, allowed string) fieldCheck {
	return func(path string, v any) error {
		n, err := intOf(path, v)
		if err == nil && n < lo {
			err = fmt.Errorf("%s (%d) must be %s", path, n, allowed)
		}
		return err
	}
}

func checkCommitMetadataBytes(path string, v any) error {
	n, err := intOf(path, v)
	if err == nil && (n < minCommitMetadataBytes || n > maxCommitMetadataBytes) {
		err = fmt.Errorf("%s (%d) must be between %d and %d bytes (the broker's offset.metadata.max.bytes is 4096 by default)",
			path, n, minCommitMetadataBytes, maxCommitMetadataBytes)
	}
	return err
}

// checkByteSize: a byte size as parseBytes reads it, that fits a Kafka
// request's int32.
var checkByteSize = checkByteSizeBetween(1, maxInt32)

// checkByteSizeBetween: a byte size as parseBytes reads it, from lo to hi.
func checkByteSizeBetween(lo, hi int64) fieldCheck {
	return func(path string, v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s (%v) is not a byte size such as 1048576, 512KiB or 1MB: write it as a string", path, v)
		}
		n, err := parseBytes(path, s)
		if err == nil && (n < lo || n > hi) {
			err = fmt.Errorf("%s (%d) must be between %d and %d bytes", path, n, lo, hi)
		}
		return err
	}
}

func checkOneOf(options ...string) fieldCheck {
	return func(path string, v any) error {
		s, _ := v.(string)
		for _, o := range options {
			if s == o {
				return nil
			}
		}
		return fmt.Errorf("%s (%q) must be one of %s", path, fmt.Sprint(v), strings.Join(options, ", "))
	}
}

func checkNotEmpty(msg string) fieldCheck {
	return func(path string, v any) error {
		if s, _ := v.(string); s == "" {
			return fmt.Errorf("%s: %s", path, msg)
		}
		return nil
	}
}

// checkBrokers: at least one address (noBrokers says so when there is
// none), each one kgo can dial. kgo takes a missing port as 9092 and refuses
// a port that is not a number only when it connects, which at start means
// retrying for ever. Lint calls a list field's rule on the list and on each
// entry: an entry alone (a string) is left to the list's call.
func checkBrokers(noBrokers string) fieldCheck {
	return func(path string, v any) error { return checkBrokerList(path, v, noBrokers) }
}

func checkBrokerList(path string, v any, noBrokers string) error {
	var entries []string
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			entries = append(entries, fmt.Sprint(e))
		}
	case []string:
		entries = l
	case nil:
	default:
		return nil // not a list: Benthos says so
	}
	addrs := kafkaconn.SplitEntries(entries)
	if len(addrs) == 0 {
		return fmt.Errorf("%s: %s", path, noBrokers)
	}
	var errs []error
	for _, a := range addrs {
		if err := checkBrokerAddr(a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q %w", path, a, err))
		}
	}
	return errors.Join(errs...)
}

// checkBrokerAddr accepts what kgo's parseBrokerAddr (kgo client.go) reads
// as host[:port], [ipv6][:port] or a bare IPv6 literal, with a port from 1 to
// 65535.
func checkBrokerAddr(addr string) error {
	const want = "is not a broker address: want host:port, such as localhost:9092 (port 1-65535; 9092 when left out)"
	var port string
	switch {
	case strings.HasPrefix(addr, "["):
		host, rest, ok := strings.Cut(addr[1:], "]")
		if !ok || host == "" {
			return errors.New(want)
		}
		if rest == "" {
			return nil
		}
		if !strings.HasPrefix(rest, ":") {
			return errors.New(want)
		}
		port = rest[1:]
	case !strings.Contains(addr, ":"):
		return nil
	default:
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			return nil // an IPv6 literal: kgo adds 9092
		}
		if host == "" {
			return errors.New(want)
		}
		port = p
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New(want)
	}
	return nil
}
