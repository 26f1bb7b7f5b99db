package plugin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// shareConfig is the parsed and validated configuration of one kafka_share
// input. Read-only once parsed.
type shareConfig struct {
	conn            kafkaconn.Config
	topics          []string
	group           string
	rackID          string
	startOffset     string // "" when unset: the group's setting is left alone
	members         int
	batchMaxRecords int
	batchMaxBytes   int64

	// deadLetterTopic is the field as written ("": reject at the last
	// attempt), deadLetter its interpolation.
	deadLetterTopic string
	deadLetter      *service.InterpolatedString
	// maxAttempts is dead_letter.max_attempts; 0 when unset: the group's
	// delivery limit, read at connect.
	maxAttempts int

	// testMemberOpts, set by tests only, adds kgo options to member i's
	// client (a debug logger): nil in every config a user writes.
	testMemberOpts func(i int) []kgo.Opt
}

// parseShareConfig checks each field's value (check.go), reads every
// field, then validates the whole config once. Lint runs it too (lint.go).
func parseShareConfig(pc *service.ParsedConfig) (*shareConfig, error) {
	if errs := checkFields(pc, shareFieldChecks, shareRequiredFields); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c := &shareConfig{}
	var errs []error
	conn, err := kafkaconn.Parse(pc)
	errs = append(errs, err)
	c.conn = conn
	topics, err := pc.FieldStringList(fieldTopics)
	errs = append(errs, err)
	c.topics = kafkaconn.SplitEntries(topics)
	c.group, err = pc.FieldString(fieldShareGroup)
	errs = append(errs, err)
	c.rackID, err = pc.FieldString(fieldRackID)
	errs = append(errs, err)
	if pc.Contains(fieldStartOffset) {
		c.startOffset, err = pc.FieldString(fieldStartOffset)
		errs = append(errs, err)
	}
	c.members, err = pc.FieldInt(fieldMembers)
	errs = append(errs, err)
	c.batchMaxRecords, err = pc.FieldInt(fieldBatchMaxRecords)
	errs = append(errs, err)
	bytes, err := pc.FieldString(fieldBatchMaxBytes)
	if err == nil {
		c.batchMaxBytes, err = parseBytes(fieldBatchMaxBytes, bytes)
	}
	errs = append(errs, err)
	c.deadLetterTopic, err = pc.FieldString(fieldDeadLetter, fieldDeadLetterTopic)
	errs = append(errs, err)
	if c.deadLetterTopic != "" {
		c.deadLetter, err = pc.FieldInterpolatedString(fieldDeadLetter, fieldDeadLetterTopic)
		errs = append(errs, err)
	}
	if pc.Contains(fieldDeadLetter, fieldDeadLetterMaxAttempts) {
		c.maxAttempts, err = pc.FieldInt(fieldDeadLetter, fieldDeadLetterMaxAttempts)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks the config as a whole, once each field passed its own
// check. Each message names the field, the value and the limit.
func (c *shareConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.topics) == 0 {
		bad("%s: at least one topic is required", fieldTopics)
	}
	for _, t := range c.topics {
		if strings.Contains(t, ":") {
			bad("%s: %q names partitions: a share group assigns them", fieldTopics, t)
		}
	}
	validateSASL(c.conn.SASL, "input", func(err error) { errs = append(errs, err) })
	if c.deadLetterTopic != "" && !strings.Contains(c.deadLetterTopic, "${!") && c.matcher().matches(c.deadLetterTopic) {
		bad("%s.%s (%q) is a topic this input consumes; dead letters would be consumed again", fieldDeadLetter, fieldDeadLetterTopic, c.deadLetterTopic)
	}
	return errors.Join(errs...)
}

// matcher tells the topics this input consumes.
func (c *shareConfig) matcher() topicMatcher { return topicMatcher{topics: c.topics} }
