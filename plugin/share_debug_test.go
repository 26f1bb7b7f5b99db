package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareDebugInputName is kafka_share registered again for tests that must
// read what happened when a run fails: its members' kgo clients log at
// debug, its own lines go there too, and every message handed out and every
// ack is logged, all into the log of its share group (shareDebugLogs).
const shareDebugInputName = "kafka_share_debug"

func init() {
	err := service.RegisterBatchInput(shareDebugInputName, ShareConfigSpec(), func(pc *service.ParsedConfig, res *service.Resources) (service.BatchInput, error) {
		conf, err := parseShareConfig(pc)
		if err != nil {
			return nil, err
		}
		l := shareDebugLogs.of(conf.group)
		return &shareDebugInput{ShareInput: newShareDebugInput(conf, res, l), l: l}, nil
	})
	if err != nil {
		panic(err)
	}
}

// newShareDebugInput is newShareInput logging into l: the input's own
// lines at debug, and its members' kgo lines at debug, each line naming
// its member.
func newShareDebugInput(conf *shareConfig, res *service.Resources, l *debugLog) *ShareInput {
	conf.testMemberOpts = func(i int) []kgo.Opt {
		return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(l, kgo.LogLevelDebug, func() string { return l.stamp(fmt.Sprintf("kgo m%d ", i)) }))}
	}
	in := newShareInput(conf, res)
	in.log = service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return in
}

// shareDebugInput is a ShareInput that logs each message it hands out
// (value, offset, delivery attempt) and each ack it is given.
type shareDebugInput struct {
	*ShareInput
	l *debugLog
}

func (d *shareDebugInput) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	msgs, ack, err := d.ShareInput.ReadBatch(ctx)
	if err != nil {
		return msgs, ack, err
	}
	var what []string
	for _, m := range msgs {
		b, _ := m.AsBytes()
		off, _ := m.MetaGetMut("kafka_offset")
		att, _ := m.MetaGetMut("kafka_delivery_attempt")
		what = append(what, fmt.Sprintf("%s@%v(attempt %v)", b, off, att))
	}
	d.l.printf("input: handed out %s", strings.Join(what, " "))
	return msgs, func(ctx context.Context, err error) error {
		d.l.printf("input: ack of %s: err=%v", strings.Join(what, " "), err)
		defer d.l.printf("input: ack of %s returned", strings.Join(what, " "))
		return ack(ctx, err)
	}, nil
}

func (d *shareDebugInput) Close(ctx context.Context) error {
	d.l.printf("input: Close")
	defer d.l.printf("input: Close returned")
	return d.ShareInput.Close(ctx)
}

// debugLogs is the logs of share groups by name. Safe for concurrent use.
type debugLogs struct {
	mu   sync.Mutex
	logs map[string]*debugLog
}

var shareDebugLogs = &debugLogs{logs: map[string]*debugLog{}}

// of is group's log, made at its first use.
func (d *debugLogs) of(group string) *debugLog {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.logs[group]
	if !ok {
		l = &debugLog{start: time.Now()}
		d.logs[group] = l
	}
	return l
}

// drop forgets group's log.
func (d *debugLogs) drop(group string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.logs, group)
}

// debugLog is one group's log: lines stamped with the time since it was
// made. Safe for concurrent use.
type debugLog struct {
	start time.Time
	mu    sync.Mutex
	b     strings.Builder
}

func (l *debugLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *debugLog) stamp(s string) string {
	return fmt.Sprintf("%9.4fs %s", time.Since(l.start).Seconds(), s)
}

func (l *debugLog) printf(format string, args ...any) {
	_, _ = l.Write([]byte(l.stamp(fmt.Sprintf(format, args...)) + "\n"))
}

func (l *debugLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// observeShareRequests logs, into the log of each request's share group,
// the share-group requests kc receives: heartbeats with their member epoch,
// fetches and acknowledgements with their session epoch and every
// acknowledgement batch. It only observes: kc handles every request.
func observeShareRequests(kc *kfake.Cluster) {
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	type batch = struct {
		first, last int64
		types       []int8
	}
	acks := func(bs []batch) string {
		var out []string
		for _, b := range bs {
			out = append(out, fmt.Sprintf("%d-%d:%v", b.first, b.last, b.types))
		}
		return strings.Join(out, ",")
	}
	kc.ControlKey(int16(kmsg.ShareGroupHeartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ShareGroupHeartbeatRequest)
		shareDebugLogs.of(r.GroupID).printf("kfake: heartbeat member=%s epoch=%d", r.MemberID, r.MemberEpoch)
		return nil, nil, false
	})
	kc.ControlKey(int16(kmsg.ShareFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ShareFetchRequest)
		var bs []batch
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				for _, b := range p.AcknowledgementBatches {
					bs = append(bs, batch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
				}
			}
		}
		shareDebugLogs.of(str(r.GroupID)).printf("kfake: share fetch member=%s session_epoch=%d max_wait=%d renew=%v acks=[%s]", str(r.MemberID), r.ShareSessionEpoch, r.MaxWaitMillis, r.IsRenewAck, acks(bs))
		return nil, nil, false
	})
	kc.ControlKey(int16(kmsg.ShareAcknowledge), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ShareAcknowledgeRequest)
		var bs []batch
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				for _, b := range p.AcknowledgementBatches {
					bs = append(bs, batch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
				}
			}
		}
		shareDebugLogs.of(str(r.GroupID)).printf("kfake: share acknowledge member=%s session_epoch=%d renew=%v acks=[%s]", str(r.MemberID), r.ShareSessionEpoch, r.IsRenewAck, acks(bs))
		return nil, nil, false
	})
}
