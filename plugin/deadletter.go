package plugin

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/deadletter"
	"github.com/watermark-connect/watermark-connect/internal/engine"
	"github.com/watermark-connect/watermark-connect/internal/kafkamsg"
	"github.com/watermark-connect/watermark-connect/internal/produce"
	"github.com/watermark-connect/watermark-connect/internal/txn"
)

// validateDeadLetter checks the dead_letter block: the lint rule's checks,
// with the parsed values.
func (c *config) validateDeadLetter(bad func(string, ...any)) {
	if c.deadLetterTopic == "" {
		return
	}
	if c.maxAttempts < 1 {
		bad("%s.%s (%d) must be at least 1 when %s.%s is set (%q)", fieldDeadLetter, fieldDeadLetterMaxAttempts, c.maxAttempts, fieldDeadLetter, fieldDeadLetterTopic, c.deadLetterTopic)
	}
	if !c.commitMetadata {
		bad("%s.%s (%q) needs %s: true, where the attempts are carried", fieldDeadLetter, fieldDeadLetterTopic, c.deadLetterTopic, fieldCommitMetadata)
	}
	if !strings.Contains(c.deadLetterTopic, "${!") && c.consumes(c.deadLetterTopic) {
		bad("%s.%s (%q) is a topic this input consumes; dead letters would be consumed again", fieldDeadLetter, fieldDeadLetterTopic, c.deadLetterTopic)
	}
}

// consumes reports whether topic is one this input consumes (a
// topicMatcher of c; for many topics, make one and keep it).
func (c *config) consumes(topic string) bool { return c.topicMatcher().matches(topic) }

// topicMatcher tells the topics an input consumes: its topics, or under
// regexp_topics those its patterns include and do not exclude. Patterns
// that do not compile are validate's to refuse, and match nothing here.
// Read-only once made: safe for concurrent use.
type topicMatcher struct {
	topics           []string
	include, exclude []*regexp.Regexp
	regex            bool
}

func (c *config) topicMatcher() topicMatcher {
	compile := func(patterns []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for _, p := range patterns {
			if re, err := regexp.Compile(p); err == nil {
				out = append(out, re)
			}
		}
		return out
	}
	include := c.topics
	if len(c.regexpInclude) > 0 {
		include = c.regexpInclude
	}
	if !c.regexpTopics && len(c.regexpInclude) == 0 {
		return topicMatcher{topics: include}
	}
	return topicMatcher{include: compile(include), exclude: compile(c.regexpExclude), regex: true}
}

func (m topicMatcher) matches(topic string) bool {
	if !m.regex {
		return slices.Contains(m.topics, topic)
	}
	match := func(res []*regexp.Regexp) bool {
		return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(topic) })
	}
	return match(m.include) && !match(m.exclude)
}

// deadLetterWriter writes dead letters with a producer client of its own,
// on the input's cluster and connection settings, through the output's
// producer code (internal/produce): acks from all in-sync replicas,
// idempotence, murmur2 on the key, no linger; records keyed and stamped as
// the originals. Safe for concurrent use: Write is called from a goroutine
// per batch.
type deadLetterWriter struct {
	topic    *service.InterpolatedString
	consumed topicMatcher // the input's topics: never a dead-letter topic
	cl       *kgo.Client
	p        *produce.Producer // writes through cl
	// sess, under exactly_once, is the input's transactional session:
	// dead letters go into its open transaction (useSession), cl is nil.
	sess *txn.Session
	// shareGroup is the kafka_share input's share group, written in every
	// letter (deadletter.HeaderShareGroup); "" for kafka_watermark.
	shareGroup string
}

// useSession writes dead letters through s, in its transactions, instead
// of through a client of the writer's own, which it closes: a dead letter
// and the commit past its record land together, or neither does.
func (w *deadLetterWriter) useSession(s *txn.Session) {
	if w == nil {
		return
	}
	w.cl.Close()
	w.cl, w.sess, w.p = nil, s, s.Producer(deadLetterProducer)
}

// deadLetterProducer is how dead letters are produced: the producer's
// defaults, sent at once. A dead letter larger than Kafka's default
// max.message.bytes (an origin record near it, with the provenance headers
// added) is a failed write that says so.
var deadLetterProducer = produce.Config{NoLinger: true, LimitName: "Kafka's default max.message.bytes"}

// newDeadLetterWriter makes the producer; nil when dead_letter.topic is empty.
func newDeadLetterWriter(conf *config) (*deadLetterWriter, error) {
	if conf.deadLetter == nil {
		return nil, nil
	}
	cl, p, err := produce.NewClient(conf.conn().Opts(), deadLetterProducer)
	if err != nil {
		return nil, fmt.Errorf("kafka_watermark: invalid dead-letter producer options: %w", err)
	}
	return &deadLetterWriter{topic: conf.deadLetter, consumed: conf.topicMatcher(), cl: cl, p: p}, nil
}

// Write produces l's records to their dead-letter topic and returns once the
// broker acknowledged them all, naming the topic(s) written. The topics are
// evaluated on the first try and kept in l for the next ones: once per
// record.
func (w *deadLetterWriter) Write(ctx context.Context, l *engine.Letter) (string, error) {
	if l.Topics == nil {
		topics := make([]string, len(l.Records))
		for i, r := range l.Records {
			dest, err := w.destination(r)
			if err != nil {
				return "", fmt.Errorf("%s.%s for %s/%d offset %d: %w", fieldDeadLetter, fieldDeadLetterTopic, r.Topic, r.Partition, r.Offset, err)
			}
			topics[i] = dest
		}
		l.Topics = topics
	}
	f := deadletter.Failure{Attempts: l.Attempts, Error: l.Error, FirstFailed: l.FirstFailed, Member: l.Member, ShareGroup: w.shareGroup}
	out := make([]*kgo.Record, 0, len(l.Records))
	var dests []string
	for i, r := range l.Records {
		dest := l.Topics[i]
		out = append(out, deadletter.Letter(r, dest, f))
		if !slices.Contains(dests, dest) {
			dests = append(dests, dest)
		}
	}
	produceAll := w.p.ProduceAll
	if w.sess != nil {
		produceAll = func(ctx context.Context, rs []*kgo.Record) []error { return w.sess.Produce(ctx, w.p, rs) }
	}
	if err := produce.FirstErr(produceAll(ctx, out)); err != nil {
		return "", fmt.Errorf("producing to dead-letter topic %s: %w", strings.Join(dests, ","), err)
	}
	return strings.Join(dests, ","), nil
}

// destination evaluates dead_letter.topic on r as the input builds its
// message, before any processor.
func (w *deadLetterWriter) destination(r *kgo.Record) (string, error) {
	msg := kafkamsg.RecordsToBatch([]*kgo.Record{r}, -1)[0]
	dest, err := w.topic.TryString(msg)
	switch {
	case err != nil:
		return "", err
	case dest == "":
		return "", fmt.Errorf("evaluated to an empty topic")
	case w.consumed.matches(dest):
		return "", fmt.Errorf("evaluated to %q, a topic this input consumes", dest)
	}
	return dest, nil
}

// close closes the producer.
func (w *deadLetterWriter) close() {
	if w != nil && w.cl != nil {
		w.cl.Close()
	}
}
