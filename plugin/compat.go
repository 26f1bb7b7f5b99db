package plugin

import (
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// The redpanda input's fields (Redpanda Connect v4.106) that have no field of
// the same meaning here. Each is accepted and mapped to its equivalent, or
// rejected with what to use instead; none is silently ignored. The README's
// upgrade table lists every redpanda field and its outcome, and
// compat_test.go holds the two to each other.
const (
	fieldAutoReplayNacks    = "auto_replay_nacks"
	fieldStartFromOldest    = "start_from_oldest"
	fieldPartitionBuffer    = "partition_buffer_bytes"
	fieldMaxYieldBatchBytes = "max_yield_batch_bytes"
	fieldUnordered          = "unordered_processing"
	fieldUnorderedEnabled   = "enabled"
	fieldCheckpointLimit    = "checkpoint_limit"
	fieldUnorderedBatching  = "batching"
	fieldTimelyNacks        = service.ForceTimelyNacksFieldName
	fieldExtractTracing     = "extract_tracing_map"
)

// Defaults that a mapped redpanda field replaces. Benthos fills defaults in
// before the lint rule and the parser see a config, so "set" means "not at its
// default": a mapped field whose equivalent is at another value is a conflict,
// at lint and in validate alike.
const (
	defaultMaxPending    = 1024
	defaultMaxPendingS   = "1024"
	defaultBatchMaxBytes = "1MiB"
	defaultBatchBytesN   = 1 << 20
	// defaultFetchMaxBytes is our own: the redpanda input's is 50MiB (the
	// field's description and docs/BENCHMARKS.md, issue 31, say why).
	defaultFetchMaxBytes = "16MiB"
)

// Messages of validate and the field checks ("<name>: <message>"), which lint
// runs too.
const (
	msgNoBrokers = "at least one broker address is required (this input never falls back to a global redpanda block)"
	msgNoTopics  = "at least one topic is required (or regexp_topics_include patterns)"
	msgNoGroup   = "a group name is required: this input is a group consumer, it commits each partition's watermark for its group (the redpanda input's consuming without a group, of all or of explicit partitions, has no equivalent here)"

	msgExplicitPartitions = "names explicit partitions; this input is a group consumer: use consumer_group and let the group assign partitions"
	msgIncludeWithTopics  = "cannot be used together with topics, as in the redpanda input: list the patterns in one of them"
	msgExcludeNoRegex     = "needs regular expression mode (regexp_topics: true or regexp_topics_include), as in the redpanda input"
	msgStartFromOldest    = "false contradicts start_offset: earliest, as in the redpanda input: use start_offset: latest (start_from_oldest is deprecated)"
	msgAutoReplayFalse    = "false commits past failed data in the redpanda input; this input never does: remove it; to move past failures you do not want to retry forever, set dead_letter.topic: they are written there after dead_letter.max_attempts deliveries (config/dead-letter.yaml)"
	msgAutoReplayConflict = "true is nack_retry.max_retries: -1 here, which contradicts the nack_retry.max_retries set: set only one of them"
	msgPartitionBuffer    = "the per-partition bound here is max_pending_batches batches handed out, plus fewer than 8 batches fetched and not handed out yet and one fetch (fetch_max_partition_bytes), each batch at most batch_max_bytes; set those instead"
	msgMaxYieldConflict   = "this is batch_max_bytes here, which is set too: set only one of them"
	msgCheckpointConflict = "this is max_pending_batches here (counted in batches, not messages), which is set too: set only one of them"
	msgBatching           = "batches here are cut by batch_max_records and batch_max_bytes, one partition per batch; use a batching policy on the output instead"
)

// redpandaFields are the spec's fields for the redpanda input's settings that
// exist here only to be mapped or rejected, and its wrappers. Those that exist
// only for ported configs are Deprecated: `create` leaves deprecated fields
// out, where it would otherwise write each optional field with its type's
// zero value (auto_replay_nacks: false, partition_buffer_bytes: "",
// max_yield_batch_bytes: "", checkpoint_limit: 0), which are rejections or
// invalid values here; lint still accepts them unless run with --deprecated.
func redpandaFields() []*service.ConfigField {
	return []*service.ConfigField{
		service.NewBoolField(fieldAutoReplayNacks).
			Description("Accepted for configs written for the redpanda input. `true`, its default there, is `nack_retry.max_retries: -1` here: a nacked batch is retried in this process without limit, with `nack_retry`'s backoff, holding its partition's watermark. `false` is rejected: there it commits past the failed data, which this input never does; to move past failures you do not want to retry forever, set `dead_letter.topic` (`config/dead-letter.yaml`). Absent, `nack_retry` alone decides.").
			Optional().Advanced().Deprecated(),
		service.NewBoolField(fieldStartFromOldest).
			Description("Deprecated, as in the redpanda input, where `start_offset` decides. `true` has no further effect; `false` together with `start_offset: earliest` is rejected, as there: use `start_offset: latest`.").
			Default(true).Advanced().Deprecated(),
		service.NewStringField(fieldPartitionBuffer).
			Description("Rejected: the redpanda input's per-partition fetch buffer. The per-partition bound here is `max_pending_batches` batches handed out, plus fewer than 8 batches fetched and not handed out yet and one fetch (`fetch_max_partition_bytes`), each batch at most `batch_max_bytes`: set those.").
			Optional().Advanced().Deprecated(),
		service.NewStringField(fieldMaxYieldBatchBytes).LintRule(fieldRule(fieldMaxYieldBatchBytes)).
			Description("Accepted for configs written for the redpanda input: the most bytes in one batch, which is `batch_max_bytes` here (set only one of them). Absent, `batch_max_bytes` applies: 1MiB by default, where this field's default in the redpanda input is 32KB.").
			Optional().Advanced().Deprecated(),
		service.NewObjectField(fieldUnordered,
			service.NewBoolField(fieldUnorderedEnabled).
				Description("Accepted, `true` or `false`, with nothing to change: see `unordered_processing`.").
				Default(false),
			service.NewIntField(fieldCheckpointLimit).LintRule(fieldRule(fieldUnordered+"."+fieldCheckpointLimit)).
				Description("Accepted: this is `max_pending_batches` here (set only one of them), counted in batches, not in messages as in the redpanda input.").
				Optional(),
			service.NewBatchPolicyField(fieldUnorderedBatching).
				Description("Rejected unless it batches nothing (a no-op policy): batches here are cut by `batch_max_records` and `batch_max_bytes`, one partition per batch; use a batching policy on the output instead.").
				Optional(),
		).
			Description("Accepted for configs written for the redpanda input. This input always lets a partition's batches be processed in parallel and acknowledged in any order, and commits only through the contiguous delivered watermark, whatever `enabled` says.").
			Optional().Advanced().Deprecated(),
		// A default, where Benthos's field is optional: create writes an optional
		// duration as "", which no duration parses.
		service.NewForceTimelyNacksField().
			Description("As in the redpanda input: a batch neither acknowledged nor rejected within this time is nacked. Here a forced nack is like any nack: the batch is retried (`nack_retry`) or stalls its partition, and is never committed past; its late acknowledgement is ignored. `0s`: no limit.").
			Default("0s"),
		service.NewExtractTracingSpanMappingField().
			Description("As in the redpanda input: a Bloblang mapping that extracts, from the first message of each batch, an object of tracing propagation fields, used as the root tracing span of the batch's messages."),
	}
}

// redpandaSeen is what parsing saw of the redpanda fields above, for mapping
// and validation.
type redpandaSeen struct {
	autoReplayNacks *bool // nil: absent
	startFromOldest bool
	partitionBuffer bool // set: rejected
	maxYieldSet     bool
	maxYieldBytes   int64
	checkpointSet   bool
	checkpointLimit int
	batching        *service.BatchPolicy // nil: absent

	// Set by mapRedpanda: which mappings applied, and which conflicted.
	mappedRetries, mappedBatchBytes, mappedPending       bool
	conflictRetries, conflictBatchBytes, conflictPending bool
}

// parseRedpanda reads the redpanda fields into c.redpanda.
func parseRedpanda(pc *service.ParsedConfig, c *config) []error {
	var errs []error
	rp := &c.redpanda
	if pc.Contains(fieldAutoReplayNacks) {
		v, err := pc.FieldBool(fieldAutoReplayNacks)
		errs = append(errs, err)
		rp.autoReplayNacks = &v
	}
	var err error
	rp.startFromOldest, err = pc.FieldBool(fieldStartFromOldest)
	errs = append(errs, err)
	rp.partitionBuffer = pc.Contains(fieldPartitionBuffer)
	if pc.Contains(fieldMaxYieldBatchBytes) {
		rp.maxYieldSet = true
		s, err := pc.FieldString(fieldMaxYieldBatchBytes)
		if err == nil {
			rp.maxYieldBytes, err = parseBytes(fieldMaxYieldBatchBytes, s)
		}
		errs = append(errs, err)
	}
	if pc.Contains(fieldUnordered, fieldCheckpointLimit) {
		rp.checkpointSet = true
		rp.checkpointLimit, err = pc.FieldInt(fieldUnordered, fieldCheckpointLimit)
		errs = append(errs, err)
	}
	if pc.Contains(fieldUnordered, fieldUnorderedBatching) {
		bp, err := pc.FieldBatchPolicy(fieldUnordered, fieldUnorderedBatching)
		errs = append(errs, err)
		rp.batching = &bp
	}
	return errs
}

// mapRedpanda applies the mapped redpanda fields to their equivalents, each
// only while its equivalent is at its default; validate reports a conflict
// for any equivalent left at another value.
func (c *config) mapRedpanda() {
	rp := &c.redpanda
	if rp.autoReplayNacks != nil && *rp.autoReplayNacks {
		switch c.nackRetries {
		case 0:
			c.nackRetries, rp.mappedRetries = -1, true
		case -1:
		default:
			rp.conflictRetries = true
		}
	}
	if rp.maxYieldSet {
		if c.batchMaxBytes == defaultBatchBytesN {
			c.batchMaxBytes, rp.mappedBatchBytes = rp.maxYieldBytes, true
		} else {
			rp.conflictBatchBytes = true
		}
	}
	if rp.checkpointSet {
		if c.maxPending == defaultMaxPending {
			c.maxPending, rp.mappedPending = rp.checkpointLimit, true
		} else {
			rp.conflictPending = true
		}
	}
}

// validateRedpanda is validate's part for the redpanda input's fields and
// topic syntax.
func (c *config) validateRedpanda(bad func(format string, args ...any)) {
	rp := c.redpanda
	for _, t := range c.topics {
		if strings.Contains(t, ":") {
			bad("%s: %q %s", fieldTopics, t, msgExplicitPartitions)
		}
	}
	if len(c.topics) > 0 && len(c.regexpInclude) > 0 {
		bad("%s: %s", fieldRegexpTopicsInclude, msgIncludeWithTopics)
	}
	if len(c.regexpExclude) > 0 && !c.regexpTopics && len(c.regexpInclude) == 0 {
		bad("%s: %s", fieldRegexpTopicsExclude, msgExcludeNoRegex)
	}
	if !rp.startFromOldest && c.startOffset == startEarliest {
		bad("%s: %s", fieldStartFromOldest, msgStartFromOldest)
	}
	if rp.autoReplayNacks != nil {
		if !*rp.autoReplayNacks {
			bad("%s: %s", fieldAutoReplayNacks, msgAutoReplayFalse)
		} else if rp.conflictRetries {
			bad("%s: %s (%s.%s: %d)", fieldAutoReplayNacks, msgAutoReplayConflict, fieldNackRetry, fieldNackMaxRetries, c.nackRetries)
		}
	}
	if rp.partitionBuffer {
		bad("%s: %s", fieldPartitionBuffer, msgPartitionBuffer)
	}
	if rp.conflictBatchBytes {
		bad("%s: %s (%s: %d bytes)", fieldMaxYieldBatchBytes, msgMaxYieldConflict, fieldBatchMaxBytes, c.batchMaxBytes)
	}
	if rp.conflictPending {
		bad("%s.%s: %s (%s: %d)", fieldUnordered, fieldCheckpointLimit, msgCheckpointConflict, fieldMaxPendingBatches, c.maxPending)
	}
	if rp.batching != nil && !rp.batching.IsNoop() {
		bad("%s.%s: %s", fieldUnordered, fieldUnorderedBatching, msgBatching)
	}
	validateSASL(c.sasl, "input", func(err error) { bad("%v", err) })
}
