package plugin

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// config is the parsed and validated configuration of one input.
type config struct {
	// exactlyOnce makes the client transactional (txn.go);
	// transactionalID is empty for the derived one.
	exactlyOnce        bool
	transactionalID    string
	transactionTimeout time.Duration

	seedBrokers            []string
	topics                 []string
	regexpTopics           bool
	group                  string
	clientID               string
	rackID                 string
	instanceID             string
	startOffset            string
	sessionTimeout         time.Duration
	rebalanceTimeout       time.Duration
	heartbeat              time.Duration
	fetchMaxBytes          int64
	fetchMaxPartitionBytes int64
	fetchMaxWait           time.Duration
	metadataMaxAge         time.Duration
	topicLagRefresh        time.Duration
	isolation              string
	readCommitted          bool
	tls                    *tls.Config // nil when disabled
	sasl                   []kafkaconn.SASL
	commitPeriod           time.Duration
	maxPending             int
	batchMaxRecords        int
	batchMaxBytes          int64
	drainTimeout           time.Duration
	groupProtocol          string
	nackRetries            int
	nackBackoff            time.Duration
	nackMaxBackoff         time.Duration

	stallReplayAfter time.Duration
	// lostReportFor is how long commits carry a loss (internal/engine/loss.go).
	lostReportFor time.Duration

	commitMetadata         bool
	commitMetadataMaxBytes int

	// The dead-letter topic: deadLetterTopic is the field as written ("":
	// off), deadLetter its interpolation.
	deadLetterTopic     string
	deadLetter          *service.InterpolatedString
	maxAttempts         int
	deadLetterReportFor time.Duration

	ordering       string
	maxHeldRecords int

	regexpInclude          []string // regexp_topics_include; validate moves them to topics
	regexpExclude          []string
	fetchMinBytes          int64
	requestTimeoutOverhead time.Duration
	connIdleTimeout        time.Duration
	dialer                 *net.Dialer // the tcp block's; nil when absent (kgo's own)

	redpanda redpandaSeen // the redpanda input's fields that are mapped or rejected
}

// conn is the connection's part of the config, which kafkaconn turns into
// the client's connection options.
func (c *config) conn() kafkaconn.Config {
	return kafkaconn.Config{
		SeedBrokers:            c.seedBrokers,
		ClientID:               c.clientID,
		TLS:                    c.tls,
		SASL:                   c.sasl,
		Dialer:                 c.dialer,
		SessionTimeout:         c.sessionTimeout,
		MetadataMaxAge:         c.metadataMaxAge,
		RequestTimeoutOverhead: c.requestTimeoutOverhead,
		ConnIdleTimeout:        c.connIdleTimeout,
	}
}

// setConn sets the connection's fields from kafkaconn.Parse; conn gives
// them back.
func (c *config) setConn(conn kafkaconn.Config) {
	c.seedBrokers, c.clientID = conn.SeedBrokers, conn.ClientID
	c.tls, c.sasl, c.dialer = conn.TLS, conn.SASL, conn.Dialer
	c.sessionTimeout, c.metadataMaxAge = conn.SessionTimeout, conn.MetadataMaxAge
	c.requestTimeoutOverhead, c.connIdleTimeout = conn.RequestTimeoutOverhead, conn.ConnIdleTimeout
}

// parseConfig checks each field's value (check.go), reads every field, then
// validates the whole config once. Lint runs it too (lint.go).
func parseConfig(pc *service.ParsedConfig) (*config, error) {
	if errs := checkFields(pc, fieldChecks, requiredFields); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c := &config{}
	var errs []error
	str := func(dst *string, path ...string) {
		v, err := pc.FieldString(path...)
		errs = append(errs, err)
		*dst = v
	}
	dur := func(dst *time.Duration, path ...string) {
		v, err := pc.FieldDuration(path...)
		errs = append(errs, err)
		*dst = v
	}
	num := func(dst *int, path ...string) {
		v, err := pc.FieldInt(path...)
		errs = append(errs, err)
		*dst = v
	}
	size := func(dst *int64, path ...string) {
		s, err := pc.FieldString(path...)
		if err == nil {
			*dst, err = parseBytes(strings.Join(path, "."), s)
		}
		errs = append(errs, err)
	}

	list := func(path string, split bool) []string {
		if !pc.Contains(path) {
			return nil
		}
		v, err := pc.FieldStringList(path)
		errs = append(errs, err)
		if split {
			return kafkaconn.SplitEntries(v)
		}
		return v
	}
	// The connection's fields: kafkaconn reads them, for status too.
	conn, err := kafkaconn.Parse(pc)
	errs = append(errs, err)
	c.setConn(conn)
	c.topics = list(fieldTopics, true)
	c.regexpInclude = list(fieldRegexpTopicsInclude, true)
	c.regexpExclude = list(fieldRegexpTopicsExclude, false)
	c.regexpTopics, err = pc.FieldBool(fieldRegexpTopics)
	errs = append(errs, err)
	str(&c.group, fieldConsumerGroup)
	str(&c.rackID, fieldRackID)
	str(&c.instanceID, fieldInstanceID)
	str(&c.startOffset, fieldStartOffset)
	dur(&c.rebalanceTimeout, fieldRebalanceTimeout)
	dur(&c.heartbeat, fieldHeartbeatInterval)
	size(&c.fetchMaxBytes, fieldFetchMaxBytes)
	size(&c.fetchMaxPartitionBytes, fieldFetchMaxPartitionBytes)
	dur(&c.fetchMaxWait, fieldFetchMaxWait)
	dur(&c.topicLagRefresh, fieldTopicLagRefreshPeriod)
	size(&c.fetchMinBytes, fieldFetchMinBytes)
	str(&c.isolation, fieldIsolationLevel)
	c.readCommitted = c.isolation == isolationCommitted
	dur(&c.commitPeriod, fieldCommitPeriod)
	num(&c.maxPending, fieldMaxPendingBatches)
	num(&c.batchMaxRecords, fieldBatchMaxRecords)
	size(&c.batchMaxBytes, fieldBatchMaxBytes)
	dur(&c.drainTimeout, fieldDrainTimeout)
	str(&c.groupProtocol, fieldGroupProtocol)
	num(&c.nackRetries, fieldNackRetry, fieldNackMaxRetries)
	dur(&c.nackBackoff, fieldNackRetry, fieldNackInitialBack)
	dur(&c.nackMaxBackoff, fieldNackRetry, fieldNackMaxBack)
	dur(&c.stallReplayAfter, fieldStallReplayAfter)
	dur(&c.lostReportFor, fieldLostRecordsReportFor)
	c.commitMetadata, err = pc.FieldBool(fieldCommitMetadata)
	errs = append(errs, err)
	num(&c.commitMetadataMaxBytes, fieldCommitMetadataMaxBytes)
	str(&c.deadLetterTopic, fieldDeadLetter, fieldDeadLetterTopic)
	if c.deadLetterTopic != "" {
		c.deadLetter, err = pc.FieldInterpolatedString(fieldDeadLetter, fieldDeadLetterTopic)
		errs = append(errs, err)
	}
	num(&c.maxAttempts, fieldDeadLetter, fieldDeadLetterMaxAttempts)
	dur(&c.deadLetterReportFor, fieldDeadLetter, fieldDeadLetterReportFor)
	str(&c.ordering, fieldOrdering)
	num(&c.maxHeldRecords, fieldMaxHeldRecords)
	c.exactlyOnce, err = pc.FieldBool(fieldExactlyOnce)
	errs = append(errs, err)
	str(&c.transactionalID, fieldTransactionalID)
	dur(&c.transactionTimeout, fieldTransactionTimeout)
	errs = append(errs, parseRedpanda(pc, c)...)

	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.mapRedpanda()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if len(c.regexpInclude) > 0 {
		c.topics, c.regexpTopics = c.regexpInclude, true
	}
	return c, nil
}

// validate checks the config as a whole, once each field's value passed its
// own check (check.go): the rules that relate fields, and what only the parsed
// values show. Each message names the field, the value and the limit.
func (c *config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if len(c.topics) == 0 && len(c.regexpInclude) == 0 {
		bad("%s: %s", fieldTopics, msgNoTopics)
	}
	for name, patterns := range map[string][]string{
		fieldTopics:              c.topics,
		fieldRegexpTopicsInclude: c.regexpInclude,
		fieldRegexpTopicsExclude: c.regexpExclude,
	} {
		if name == fieldTopics && !c.regexpTopics {
			continue
		}
		for _, p := range patterns {
			if _, err := regexp.Compile(p); err != nil {
				bad("%s: %q is not a valid regular expression: %v", name, p, err)
			}
		}
	}
	c.validateRedpanda(bad)
	if c.drainTimeout > 0 && c.rebalanceTimeout > 0 && c.drainTimeout >= c.rebalanceTimeout {
		bad("%s (%v) must be below %s (%v): the revoke must still commit within the rebalance", fieldDrainTimeout, c.drainTimeout, fieldRebalanceTimeout, c.rebalanceTimeout)
	}
	if c.heartbeat > 0 && c.sessionTimeout > 0 && c.heartbeat >= c.sessionTimeout {
		bad("%s (%v) must be below %s (%v)", fieldHeartbeatInterval, c.heartbeat, fieldSessionTimeout, c.sessionTimeout)
	}
	c.validateDeadLetter(bad)
	c.validateExactlyOnce(bad)
	return errors.Join(errs...)
}

const maxInt32 = 1<<31 - 1

// Bounds of commit_metadata_max_bytes: room for a header and a few ranges,
// and no more than a broker would sensibly be configured to keep.
const (
	minCommitMetadataBytes = 64
	maxCommitMetadataBytes = 1 << 20
)

// The smallest budget leaves room for the longest header and stall mark, so
// that a stalled partition's commit always says so (issue 29); this fails
// to compile otherwise.
const _ = uint(minCommitMetadataBytes - commitmeta.MinCommitBudget)

// parseBytes reads a byte size as Redpanda Connect does, with go-humanize:
// a bare number is bytes, SI units are powers of 1000 ("1MB", "1M" and "1mb"
// are 1,000,000) and IEC units powers of 1024 ("1MiB" is 1,048,576).
func parseBytes(field, s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%s (%q) is not a byte size such as 1048576, 512KiB or 1MB: %w", field, s, err)
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("%s (%q) is larger than %d bytes", field, s, int64(math.MaxInt64))
	}
	return int64(n), nil
}

// engine returns what the engine needs of c.
func (c *config) engine() engine.Config {
	return engine.Config{
		ClientID:               c.clientID,
		ConsumerProtocol:       c.groupProtocol == protocolConsumer,
		SessionTimeout:         c.sessionTimeout,
		RebalanceTimeout:       c.rebalanceTimeout,
		ReadCommitted:          c.readCommitted,
		BatchMaxRecords:        c.batchMaxRecords,
		BatchMaxBytes:          c.batchMaxBytes,
		MaxPending:             c.maxPending,
		CommitPeriod:           c.commitPeriod,
		CommitMetadata:         c.commitMetadata,
		CommitMetadataMaxBytes: c.commitMetadataMaxBytes,
		NackRetries:            c.nackRetries,
		NackBackoff:            c.nackBackoff,
		NackMaxBackoff:         c.nackMaxBackoff,
		StallReplayAfter:       c.stallReplayAfter,
		DrainTimeout:           c.drainTimeout,
		LostReportFor:          c.lostReportFor,
		MaxAttempts:            c.maxAttempts,
		DeadLetterReportFor:    c.deadLetterReportFor,
		OrderingKey:            c.ordering == orderingKey,
		MaxHeldRecords:         c.maxHeldRecords,
		TopicLagRefresh:        c.topicLagRefresh,
		MetadataMaxAge:         c.metadataMaxAge,
	}
}
