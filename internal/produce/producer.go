package produce

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer writes records through a kgo client made with a Config's
// options, and tells which the broker acknowledged. It checks each record's
// size against the Config's limit before sending it. It is safe for
// concurrent use and does not own the client (package doc).
type Producer struct {
	cl        *kgo.Client
	limit     int64  // MaxMessageBytes, or its default
	limitName string // Config.LimitName
}

// New returns a Producer that writes through cl, which must have been made
// with c's options (Opts), so that the limit it checks is the client's.
// The client may be one the caller shares: New only produces through it.
func New(cl *kgo.Client, c Config) *Producer {
	return &Producer{cl: cl, limit: int64(c.maxMessageBytes()), limitName: c.LimitName}
}

// NewClient makes a client with the connection's options (conn, from
// kafkaconn.Config.Opts) and c's, and the Producer that writes through it.
// The caller closes the client.
func NewClient(conn []kgo.Opt, c Config) (*kgo.Client, *Producer, error) {
	cl, err := kgo.NewClient(append(conn[:len(conn):len(conn)], c.Opts()...)...)
	if err != nil {
		return nil, nil, err
	}
	return cl, New(cl, c), nil
}

// Client returns the client the Producer writes through.
func (p *Producer) Client() *kgo.Client { return p.cl }

// result is one record's answer.
type result struct {
	i   int
	err error
}

// ProduceAll produces every record of rs and waits for each one's answer,
// or for ctx to end. It returns, for each record, nil when the broker
// acknowledged it from all in-sync replicas, or why not (package doc): a
// *TooLargeError, kgo's error, or ctx's error for a record still
// unanswered when ctx ended. rs is not modified but by kgo (which fills in
// a record's partition, offset and, when unset, its timestamp); a record
// may not be produced twice at once.
//
// The answers come from kgo's promise goroutine into a channel with room
// for all of them, so a promise never blocks on ProduceAll, also after it
// returned on ctx's end.
func (p *Producer) ProduceAll(ctx context.Context, rs []*kgo.Record) []error {
	errs := make([]error, len(rs))
	answers := make(chan result, len(rs))
	waiting := 0
	for i, r := range rs {
		if err := p.checkSize(r); err != nil {
			errs[i] = err
			continue
		}
		waiting++
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) { answers <- result{i, err} })
	}
	answered := make([]bool, len(rs))
	for ; waiting > 0; waiting-- {
		select {
		case a := <-answers:
			errs[a.i], answered[a.i] = p.explain(rs[a.i], a.err), true
		case <-ctx.Done():
			for i := range rs {
				if errs[i] == nil && !answered[i] {
					errs[i] = fmt.Errorf("not acknowledged before the write ended (the record may still be written): %w", ctx.Err())
				}
			}
			return errs
		}
	}
	return errs
}

// FirstErr returns the first error of errs, nil when there is none.
func FirstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
