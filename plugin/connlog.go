package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/kafkaconn"
)

// kgoDialMessages are kgo's log lines for a failed dial (broker.go:1010-1013
// in v1.22.3), which kgo writes at every try, about two a second for ever
// against a bad host or port: dialReporter reports those dials instead.
var kgoDialMessages = map[string]bool{
	"unable to open connection to broker": true,
	"unable to open connection to broker due to an immediate EOF, which often means the client is using TLS when the broker is not expecting it (is TLS misconfigured?)": true,
}

// connLog is how the input's clients log: kgo's own lines (kgoLogger),
// except its per-dial failures, which a dialReporter sums up per address
// instead, and the reports of a kafkaconn.Silence: an address that accepts
// connections and answers none is said to be so after
// kafkaconn.SilentAfter, where kgo would say nothing until it gave up on
// the connection, request_timeout_overhead later (10s by default), then
// call it a failed dial.
//
// One per Input, shared by the clients of its successive Connects (a
// failed Connect closes its client, and Benthos tries again within a
// second): a broker that stays unreachable is reported at a growing
// interval across them, not anew at each. Safe for concurrent use, as its
// parts are.
type connLog struct {
	log     *service.Logger
	dials   *dialReporter
	silence *kafkaconn.Silence
}

func newConnLog(log *service.Logger) *connLog {
	silence := newSilenceLog(log)
	return &connLog{log: log, dials: newDialReporter(log, time.Now, silence), silence: silence}
}

// opts returns the kgo options through which a client logs.
func (c *connLog) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.WithLogger(&kgoLogger{log: c.log}),
		kgo.WithHooks(c.dials, c.silence),
	}
}

// newSilenceLog returns a kafkaconn.Silence that reports to log: a WARN
// line per report, at kafkaconn.NextReport's intervals, and an INFO line
// when a reported address answers.
func newSilenceLog(log *service.Logger) *kafkaconn.Silence {
	return kafkaconn.NewSilence(kafkaconn.SilentAfter, func(s kafkaconn.Silent, next time.Duration) {
		log.Warnf("kafka_watermark: %v: is it a Kafka listener, not another service or a proxy without a backend? "+
			"Each connection is given up after %s and another one tried; next report in %v", s, kafkaconn.FieldRequestTimeoutOverhead, next)
	}, func(s kafkaconn.Silent) {
		log.Infof("kafka_watermark: broker %s answered, after %v of silence", s.Addr, s.For.Round(time.Second))
	})
}

// dialReporter is a kgo.HookBrokerConnect that reports failed dials of each
// broker address as WARN lines at a growing interval (kafkaconn.NextReport),
// each naming the address, the last error and how many dials failed since
// the line before; and, once a dial of an address succeeds after failures,
// an INFO line saying so. It replaces kgo's own line per failed dial
// (kgoDialMessages). A connection to an address that silence reports,
// given up unanswered, is left to silence: it was no failed dial.
//
// Safe for concurrent use: kgo dials from many goroutines; mu guards addrs.
type dialReporter struct {
	log     *service.Logger
	now     func() time.Time
	silence *kafkaconn.Silence // nil: none

	mu    sync.Mutex
	addrs map[string]*dialFailures // by host:port; an address is here while its dials fail
}

// dialFailures is one address's failed dials since its first failure.
type dialFailures struct {
	first    time.Time     // the first failure of this run of failures
	lastLine time.Time     // when the last line was written
	failed   int           // failures since the last line
	total    int           // failures since first
	interval time.Duration // from the last line to the next
}

func newDialReporter(log *service.Logger, now func() time.Time, silence *kafkaconn.Silence) *dialReporter {
	return &dialReporter{log: log, now: now, silence: silence, addrs: map[string]*dialFailures{}}
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (r *dialReporter) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, conn net.Conn, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
		return // the client is closing: not the broker's doing
	}
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	if err != nil && conn != nil && r.silence.Silent(addr) {
		return // connected, and no answer came: silence reports it
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.addrs[addr]
	if err == nil {
		if f != nil {
			delete(r.addrs, addr)
			r.log.Infof("kafka_watermark: connected to broker %s after %d failed dial(s) over %v", addr, f.total, now.Sub(f.first).Round(time.Second))
		}
		return
	}
	if f == nil {
		f = &dialFailures{first: now}
		r.addrs[addr] = f
	}
	f.failed++
	f.total++
	if f.total > 1 && now.Sub(f.lastLine) < f.interval {
		return
	}
	hint := ""
	if errors.Is(err, io.EOF) {
		hint = " (an immediate EOF often means TLS is on here and not at the broker)"
	}
	f.interval = kafkaconn.NextReport(f.interval)
	if f.total == 1 {
		r.log.Warnf("kafka_watermark: cannot connect to broker %s: %v%s; retrying, next report in %v", addr, err, hint, f.interval)
	} else {
		r.log.Warnf("kafka_watermark: cannot connect to broker %s: %d failed dial(s) in the last %v (%d since the first, %v ago), the last: %v%s; next report in %v",
			addr, f.failed, now.Sub(f.lastLine).Round(time.Second), f.total, now.Sub(f.first).Round(time.Second), err, hint, f.interval)
	}
	f.failed = 0
	f.lastLine = now
}

var _ kgo.HookBrokerConnect = (*dialReporter)(nil)

// kgoLogger forwards franz-go's log lines to Benthos's logger, one level
// down for info and debug: the client is chatty at info. Its lines for
// failed dials are left to dialReporter.
type kgoLogger struct{ log *service.Logger }

func (l *kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if kgoDialMessages[msg] {
		return
	}
	line := msg
	for i := 0; i+1 < len(keyvals); i += 2 {
		line += fmt.Sprintf(" %v=%v", keyvals[i], keyvals[i+1])
	}
	switch level {
	case kgo.LogLevelError:
		l.log.Errorf("kgo: %s", line)
	case kgo.LogLevelWarn:
		l.log.Warnf("kgo: %s", line)
	case kgo.LogLevelInfo:
		l.log.Debugf("kgo: %s", line)
	default:
		l.log.Tracef("kgo: %s", line)
	}
}
