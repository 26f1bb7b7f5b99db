package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// silenceLog records a Silence's reports as lines.
type silenceLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *silenceLog) silence() *Silence {
	return NewSilence(SilentAfter, func(s Silent, next time.Duration) {
		l.add(fmt.Sprintf("silent %s for %v, %d conn(s), next in %v", s.Addr, s.For, s.Conns, next))
	}, func(s Silent) {
		l.add(fmt.Sprintf("answered %s after %v", s.Addr, s.For))
	})
}

func (l *silenceLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *silenceLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// timeoutErr is what a read that hit its deadline returns.
var timeoutErr error = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// The life of a silent address, hook by hook as kgo calls them, on a fake
// clock: reported after SilentAfter, then at 5s, 10s, ... while kgo's
// connections time out one after another; one line when it answers.
func TestSilenceReportsWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l silenceLog
		s := l.silence()
		s.OnNewClient(nil)
		meta := kgo.BrokerMetadata{NodeID: -1, Host: "127.0.0.1", Port: 9092}
		other := kgo.BrokerMetadata{NodeID: 1, Host: "127.0.0.1", Port: 9093}
		const addr = "127.0.0.1:9092"
		s.OnBrokerWrite(meta, 3, 100, 0, 0, nil) // a Metadata request: not watched
		assert.Empty(t, s.addrs)

		// kgo connects every 10s: ApiVersions written, its read times out.
		for range 4 {
			s.OnBrokerWrite(meta, apiVersionsKey, 40, 0, 0, nil)
			time.Sleep(10 * time.Second)
			s.OnBrokerRead(meta, apiVersionsKey, 0, 0, 10*time.Second, timeoutErr)
			s.OnBrokerConnect(meta, 10*time.Second, &net.TCPConn{}, timeoutErr)
		}
		synctest.Wait()
		// Reports at 3s, 8s, 18s, 38s: 40s of silence, 4 connections.
		assert.Equal(t, []string{
			"silent 127.0.0.1:9092 for 3s, 1 conn(s), next in 5s",
			"silent 127.0.0.1:9092 for 8s, 1 conn(s), next in 10s",
			"silent 127.0.0.1:9092 for 18s, 2 conn(s), next in 20s",
			"silent 127.0.0.1:9092 for 38s, 4 conn(s), next in 40s",
		}, l.all())
		assert.True(t, s.Silent(addr))
		assert.False(t, s.Silent("127.0.0.1:9093"))
		err := s.Explain(errors.New("context deadline exceeded"))
		assert.EqualError(t, err, "broker 127.0.0.1:9092 accepted 4 connections and answered none in 40s "+
			"(not even ApiVersions, the first request on a connection, which a Kafka broker answers at once): context deadline exceeded")

		// It answers: one line, and nothing more.
		s.OnBrokerWrite(meta, apiVersionsKey, 40, 0, 0, nil)
		s.OnBrokerRead(meta, apiVersionsKey, 300, 0, time.Millisecond, nil)
		assert.False(t, s.Silent(addr))
		time.Sleep(time.Hour)
		synctest.Wait()
		lines := l.all()
		require.Len(t, lines, 5)
		assert.Equal(t, "answered 127.0.0.1:9092 after 40s", lines[4])
		assert.Equal(t, fmt.Errorf("x"), s.Explain(fmt.Errorf("x")), "nothing silent: the error as it is")

		// A broker that answers within SilentAfter is never reported, nor
		// is one that closes the connection without a word (its failed
		// connection is reported as such), nor one that refuses the next
		// dial.
		for _, end := range []func(){
			func() { s.OnBrokerRead(other, apiVersionsKey, 300, 0, time.Second, nil) },
			func() { s.OnBrokerRead(other, apiVersionsKey, 0, 0, time.Second, io.EOF) },
			func() {
				s.OnBrokerRead(other, apiVersionsKey, 0, 0, time.Second, timeoutErr)
				s.OnBrokerConnect(other, 0, nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
			},
		} {
			s.OnBrokerWrite(other, apiVersionsKey, 40, 0, 0, nil)
			time.Sleep(2 * time.Second)
			end()
			time.Sleep(time.Minute)
			synctest.Wait()
			assert.False(t, s.Silent("127.0.0.1:9093"))
			assert.Len(t, l.all(), 5, "nothing reported: %q", l.all())
		}

		// No report while no client is open; Explain still knows. The next
		// client (the input's next Connect) carries on where the last
		// stopped: the report due is made at once, and the interval grows.
		s.OnBrokerWrite(meta, apiVersionsKey, 40, 0, 0, nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Len(t, l.all(), 6)
		assert.Equal(t, "silent 127.0.0.1:9092 for 3s, 1 conn(s), next in 5s", l.all()[5])
		s.OnClientClosed(nil)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, l.all(), 6)
		assert.ErrorContains(t, s.Explain(context.DeadlineExceeded), "broker 127.0.0.1:9092 accepted the connection and answered nothing in 1h0m5s")
		s.OnNewClient(nil)
		s.OnBrokerWrite(meta, apiVersionsKey, 40, 0, 0, nil)
		synctest.Wait()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{
			"silent 127.0.0.1:9092 for 1h0m5s, 2 conn(s), next in 10s",
		}, l.all()[6:])
	})
}

// Issue 30: a broker address that accepts connections and never answers
// gave 20s of silence: kgo waits for the first answer as long as for any
// request (request_timeout_overhead, 10s), and a command's error said only
// "context deadline exceeded". With a Silence among its hooks, a real kgo
// client against such a listener reports the address after SilentAfter
// (here 100ms), long before kgo gives up on the connection, and the error of
// its Ping names it.
func TestSilenceOfAListenerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	silent, err := testkit.NewSilent()
	require.NoError(t, err)
	t.Cleanup(silent.Close)
	reported := make(chan Silent, 16)
	s := NewSilence(100*time.Millisecond, func(s Silent, _ time.Duration) {
		select {
		case reported <- s:
		default:
		}
	}, nil)
	cl, err := kgo.NewClient(append(Config{SeedBrokers: []string{silent.Addr()}}.Opts(), kgo.WithHooks(s))...)
	require.NoError(t, err)
	defer cl.Close()
	require.Same(t, s, SilenceOf(cl))

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // kgo's own read waits 10s
	defer cancel()
	pinged := make(chan error, 1)
	go func() { pinged <- cl.Ping(ctx) }()
	select {
	case got := <-reported:
		assert.Equal(t, silent.Addr(), got.Addr)
		assert.Equal(t, 1, got.Conns)
		assert.Contains(t, got.String(), "broker "+silent.Addr()+" accepted the connection and answered nothing in ")
	case err := <-pinged:
		t.Fatalf("Ping returned %v before the silence was reported", err)
	}
	cancel()
	err = <-pinged
	require.Error(t, err)
	explained := s.Explain(err)
	assert.ErrorIs(t, explained, context.Canceled)
	assert.True(t, strings.HasPrefix(explained.Error(), "broker "+silent.Addr()+" accepted the connection and answered nothing in "), explained.Error())
}
