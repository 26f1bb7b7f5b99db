package share_test

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/watermark-connect/watermark-connect/internal/share"
)

// printed stands for a *kgo.Record: it prints the verdicts kgo is given.
type printed string

func (p printed) Ack(s kgo.AckStatus) { fmt.Printf("%s: %v\n", string(p), s) }

// A member is polled again only once every record of its poll has a
// verdict; the verdict of a failed record follows its attempt.
func Example() {
	g := share.NewGate(1)
	ctx := context.Background()
	m, _ := g.Acquire(ctx)
	p := g.Hold(m, []share.Acker{printed("a"), printed("b")}, time.Now())

	p.Settle(0, share.Accepted)
	p.Settle(1, share.Decide(2, 5, true)) // failed at attempt 2 of 5
	p.Settle(1, share.Accepted)           // a duplicate ack: ignored

	m, err := g.Acquire(ctx) // free again: nothing of its poll is held
	fmt.Println("member", m, "free:", err == nil)
	// Output:
	// a: accept
	// b: release
	// member 0 free: true
}
