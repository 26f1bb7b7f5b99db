package plugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The intervals of the topic watch: the first check at once, then this
// often, doubling up to topicWatchMax while a topic is missing.
const (
	topicWatchFirst = 10 * time.Second
	topicWatchMax   = 5 * time.Minute
)

// watchTopics warns while any of topics (the input's, not a regexp) does not
// exist: a consumer group subscribed to a missing topic is assigned nothing
// of it and says nothing, and a pipeline said "now active" and then printed
// nothing for minutes (issue 30). It checks at once, then after 10 s,
// doubling up to 5 minutes, one WARN line per check naming the missing
// topics and when it checks again, and one INFO line when they all exist;
// then it ends. A topic this client may not describe (an ACL) reads as
// missing too, as the group sees it. It returns when ctx ends. It is run on
// a goroutine of its own, and reads nothing else of the input.
func watchTopics(ctx context.Context, adm *kadm.Client, topics []string, log *service.Logger) {
	wait := time.Duration(0)
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		next := max(topicWatchFirst, min(2*wait, topicWatchMax))
		missing, err := missingTopics(ctx, adm, topics)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Debugf("kafka_watermark: checking that the topics %v exist: %v", topics, err)
		case len(missing) == 0:
			if warned {
				log.Infof("kafka_watermark: the topics %v exist now", topics)
			}
			return
		default:
			warned = true
			log.Warnf("kafka_watermark: subscribed topic(s) %s do not exist (or this client may not describe them): nothing is consumed from them until they exist; checking again in %v",
				strings.Join(missing, ", "), next)
		}
		wait = next
	}
}

// missingTopics returns those of topics the brokers do not know, in order.
func missingTopics(ctx context.Context, adm *kadm.Client, topics []string) ([]string, error) {
	td, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, t := range topics {
		d, ok := td[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) || errors.Is(d.Err, kerr.TopicAuthorizationFailed) {
			missing = append(missing, t)
		}
	}
	return slices.Compact(missing), nil
}
