package kafkaconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker address that accepts a TCP connection and never answers (a port
// whose service waits for the client to speak first, a proxy or load
// balancer whose backend is down, a broker stuck starting) used to leave the
// input silent for 10 to 20 s: kgo waits for the first answer on a
// connection as long as for any request, request_timeout_overhead (10 s by
// default), and only then reported a failed connection, as "cannot connect
// ... i/o timeout" although it had connected. A command's error said
// "context deadline exceeded". Silence tells it as it is, early.
//
// What it relies on in kgo v1.22.3:
//
//   - every new connection first sends ApiVersions, before SASL and before
//     the request that opened it (broker.go:1131-1147, init), and a broker
//     answers it at once, without touching its logs or the group
//     coordinator;
//   - HookBrokerWrite is called once that request is written
//     (broker.go:1562-1570, writeRequest; hooks.go:75-88), and
//     HookBrokerRead once its answer is read or the read failed, with the
//     bytes read and the error (broker.go:1752-1769, readResponse;
//     hooks.go:90-102). Between the two, kgo calls no hook at all: only a
//     timer can tell that the answer is late;
//   - the read waits request_timeout_overhead: ApiVersions is no
//     TimeoutRequest (client.go:848-857, connTimeouter.timeouts), and the
//     init's requests run without a context (broker.go:1210, 1216). The
//     failed init then reaches HookBrokerConnect with the connection and
//     the read's error (broker.go:839-856: its deferred hook reads the err
//     that init set);
//   - HookNewClient is called in NewClient, before the client's goroutines
//     start (hooks.go:37-43), and HookClientClosed once Close is done
//     (client.go:1394-1399): a Silence shared by successive clients (the
//     input makes one per Connect) reports only while one of them lives.

// SilentAfter is how long the first request of a connection goes
// unanswered before Silence reports the address: a Kafka broker answers it
// within milliseconds, a loaded one well within a second.
const SilentAfter = 3 * time.Second

// apiVersionsKey is ApiVersions' request key, 18.
var apiVersionsKey = kmsg.NewPtrApiVersionsRequest().Key()

// Silence is a kgo hook (add it with kgo.WithHooks) that watches, per broker
// address, the first request of every new connection, and reports an
// address whose connections it accepted and never answered: after
// SilentAfter, then at the intervals of NextReport for as long as it stays
// silent, and once when it answers after a report. Explain names the
// silent addresses in a command's error. The zero value is not usable: use
// NewSilence.
//
// One Silence may serve successive clients, as the input's Connect makes a
// new one at each try: what it saw of an address, and how often it
// reported it, carry over, so that an address that stays silent across
// tries is reported at a growing interval, not anew at each. It reports
// only while a client it serves is open.
//
// Safe for concurrent use: kgo calls hooks from many goroutines, and the
// reports come from timers; mu guards addrs and clients. The report
// functions are called with mu held, so that the lines of one address
// never cross: they must not call the Silence's methods.
type Silence struct {
	after    time.Duration
	silent   func(s Silent, next time.Duration) // nil: no reports
	answered func(Silent)                       // nil: no line when a reported address answers

	mu      sync.Mutex
	addrs   map[string]*silentAddr // by host:port; from its first unanswered request until an answer or a refused dial
	clients int                    // clients open (OnNewClient, OnClientClosed): reports wait for one
}

// silentAddr is one address's run of unanswered connections.
type silentAddr struct {
	since    time.Time     // when the first unanswered request was written
	conns    int           // connections it accepted since (an ApiVersions written on each)
	waiting  int           // of them, whose answer is still awaited
	reports  int           // reports so far
	next     time.Time     // when the next report is due
	interval time.Duration // from the last report to the next
	timer    *time.Timer   // the next report; nil while no client is open
	armed    int           // counts the timers set: a timer that fired as it was stopped is not a's current one
}

// Silent is a broker address that accepted connections and answered none.
type Silent struct {
	Addr  string        // host:port
	For   time.Duration // since its first unanswered request
	Conns int           // connections it accepted meanwhile
}

func (s Silent) String() string {
	accepted := "the connection and answered nothing"
	if s.Conns > 1 {
		accepted = fmt.Sprintf("%d connections and answered none", s.Conns)
	}
	return fmt.Sprintf("broker %s accepted %s in %v (not even ApiVersions, the first request on a connection, which a Kafka broker answers at once)",
		s.Addr, accepted, roundFor(s.For))
}

// roundFor rounds d to the second, or, below a second, to the millisecond.
func roundFor(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// NewSilence returns a Silence that reports an address to silent once its
// first request has gone unanswered for after, then at the intervals of
// NextReport, with the interval to the next report, and to answered when
// an address it reported answers. Either may be nil; Explain works
// without them.
func NewSilence(after time.Duration, silent func(s Silent, next time.Duration), answered func(Silent)) *Silence {
	return &Silence{after: after, silent: silent, answered: answered, addrs: map[string]*silentAddr{}}
}

// OnBrokerWrite implements kgo.HookBrokerWrite: a written ApiVersions is a
// new connection waiting for its first answer.
func (s *Silence) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != apiVersionsKey || err != nil {
		return // every other request (fetches, joins) may rightly wait long
	}
	addr := brokerAddr(meta)
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.addrs[addr]
	if a == nil {
		now := time.Now()
		a = &silentAddr{since: now, next: now.Add(s.after)}
		s.addrs[addr] = a
		s.arm(addr, a)
	}
	a.conns++
	a.waiting++
}

// OnBrokerRead implements kgo.HookBrokerRead: an ApiVersions answered, even
// with bytes that do not parse, ends the address's silence; one whose read
// timed out leaves it silent (kgo connects again); one closed without a
// word is no silence: the failed connection is its own report.
func (s *Silence) OnBrokerRead(meta kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, err error) {
	if key != apiVersionsKey {
		return
	}
	addr := brokerAddr(meta)
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.addrs[addr]
	if a == nil {
		return
	}
	a.waiting = max(a.waiting-1, 0)
	var ne net.Error
	switch {
	case err == nil || bytesRead > 0:
		s.end(addr, a, true)
	case errors.As(err, &ne) && ne.Timeout():
	case a.waiting == 0:
		s.end(addr, a, false)
	}
}

// OnBrokerConnect implements kgo.HookBrokerConnect: a dial that fails ends
// the address's silence, since nothing accepts there now (the failed dial
// is reported as such).
func (s *Silence) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, conn net.Conn, err error) {
	if conn != nil || err == nil || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
		return
	}
	addr := brokerAddr(meta)
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.addrs[addr]; a != nil {
		s.end(addr, a, false)
	}
}

// OnNewClient implements kgo.HookNewClient: with a client open, the
// silent addresses are reported again when due.
func (s *Silence) OnNewClient(*kgo.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients++
	for addr, a := range s.addrs {
		s.arm(addr, a)
	}
}

// OnClientClosed implements kgo.HookClientClosed: no report while no
// client is open. What was seen stays, for Explain and for the next client.
func (s *Silence) OnClientClosed(*kgo.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients = max(s.clients-1, 0)
	if s.clients > 0 {
		return
	}
	for _, a := range s.addrs {
		s.disarm(a)
	}
}

// arm sets a's timer for its next report, at once if that is past, unless
// it is set or no client is open. Called with mu held.
func (s *Silence) arm(addr string, a *silentAddr) {
	if a.timer != nil || s.clients == 0 {
		return
	}
	a.armed++
	armed := a.armed
	a.timer = time.AfterFunc(max(time.Until(a.next), 0), func() { s.report(addr, a, armed) })
}

// disarm stops a's timer. Called with mu held.
func (s *Silence) disarm(a *silentAddr) {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}

// end forgets addr's silence; answered says it answered. Called with mu
// held.
func (s *Silence) end(addr string, a *silentAddr, answered bool) {
	s.disarm(a)
	delete(s.addrs, addr)
	if answered && a.reports > 0 && s.answered != nil {
		s.answered(Silent{Addr: addr, For: time.Since(a.since), Conns: a.conns})
	}
}

// report is a's timer, the armed-th: it reports addr, still silent, and
// sets the next report.
func (s *Silence) report(addr string, a *silentAddr, armed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addrs[addr] != a || a.timer == nil || a.armed != armed {
		return // answered, refused, or disarmed since the timer was set
	}
	a.reports++
	a.interval = NextReport(a.interval)
	a.next = time.Now().Add(a.interval)
	a.timer = nil
	s.arm(addr, a)
	if s.silent != nil {
		s.silent(Silent{Addr: addr, For: time.Since(a.since), Conns: a.conns}, a.interval)
	}
}

// Silent reports whether addr (host:port) accepted connections and has
// answered none of them since.
func (s *Silence) Silent(addr string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[addr] != nil
}

// Explain returns err with the silent addresses named before it, as
// "broker 127.0.0.1:9092 accepted the connection and answered nothing in
// 5s (...): <err>", or err as it is when none is silent or s is nil. A
// command whose client could not reach a broker calls it with that error,
// before closing the client.
func (s *Silence) Explain(err error) error {
	if s == nil || err == nil {
		return err
	}
	s.mu.Lock()
	var silent []string
	for addr, a := range s.addrs {
		silent = append(silent, Silent{Addr: addr, For: time.Since(a.since), Conns: a.conns}.String())
	}
	s.mu.Unlock()
	if len(silent) == 0 {
		return err
	}
	slices.Sort(silent)
	return fmt.Errorf("%s: %w", strings.Join(silent, "; "), err)
}

// SilenceOf returns the Silence among cl's hooks, or nil.
func SilenceOf(cl *kgo.Client) *Silence {
	hooks, _ := cl.OptValue(kgo.WithHooks).([]kgo.Hook)
	for _, h := range hooks {
		if s, ok := h.(*Silence); ok {
			return s
		}
	}
	return nil
}

// brokerAddr is meta's host:port, as a seed broker is written.
func brokerAddr(meta kgo.BrokerMetadata) string {
	return net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
}

var (
	_ kgo.HookBrokerWrite   = (*Silence)(nil)
	_ kgo.HookBrokerRead    = (*Silence)(nil)
	_ kgo.HookBrokerConnect = (*Silence)(nil)
	_ kgo.HookNewClient     = (*Silence)(nil)
	_ kgo.HookClientClosed  = (*Silence)(nil)
)
