package engine

import (
	"github.com/watermark-connect/watermark-connect/internal/commitmeta"
)

// unordered is ordering: none's delivery: a fetched batch goes out whole,
// in offset order, and is registered in the ledger as it goes out (serve,
// handout.go), so the ledger alone knows what is out, what is delivered
// and where a commit may go. A batch error narrows a batch's retries to
// the records it named (Batch.only). It holds no state of its own: the
// zero-size value costs an interface nothing to hold.
type unordered struct{}

func (unordered) admit(o *owner, p *partState) { o.passSkipped(p) }

func (unordered) next(o *owner, p *partState) *Batch {
	b := p.led.register(p, p.queue.popReady())
	p.commits.handedOut(int64(len(b.raw.records)))
	return b
}

func (unordered) canHandOut(p *partState, maxPending int) bool {
	return p.queue.readyLen() > 0 && p.led.pending() < maxPending
}

func (unordered) atLimit(*owner, *partState) bool { return false }
func (unordered) pickable() int                   { return 0 }
func (unordered) held() int                       { return -1 }

func (unordered) waitRetry(p *partState)      { p.led.waitRetry() }
func (unordered) retryOut(p *partState)       { p.led.retryOut() }
func (unordered) inPipeline(p *partState) int { return p.led.inPipeline() }
func (unordered) drainsBeforeSuccessor() bool { return false }

func (unordered) nacked(_ *owner, _ *Batch, failed []int) []int { return failed }
func (unordered) resolve(o *owner, b *Batch, err error)         { o.resolveBatch(b, err) }

func (unordered) commitBase(_ *partState, wm int64) int64 { return wm }
func (unordered) baseMoved(*partState, int64) bool        { return false }
func (unordered) leaderEpochBefore(*partState, int64) (int32, bool) {
	return -1, false
}

func (unordered) delivered(_ int64, ranges []commitmeta.Range) []commitmeta.Range {
	return ranges
}

func (unordered) stallFirst(first, _ int64) int64 { return first }

// attemptRanges: those of p's counted batches, then the carried ranges
// beyond what it has registered.
func (unordered) attemptRanges(p *partState, base int64) []commitmeta.Attempts {
	var out []commitmeta.Attempts
	for _, w := range p.led.window.batches {
		if w.b != nil && !w.delivered && w.b.counted() {
			out = w.b.appendRanges(out)
		}
	}
	return p.carriedBeyond(base, out)
}

// appendAttempts: the records a batch error named when it named some
// (b.only), each run of adjacent ones a range, else the whole batch.
func (unordered) appendAttempts(dst []commitmeta.Attempts, b *Batch, n int32) []commitmeta.Attempts {
	if b.only == nil {
		return append(dst, commitmeta.Attempts{From: b.raw.first, To: b.raw.last + 1, N: n})
	}
	for i := 0; i < len(b.only); {
		j := i
		for j+1 < len(b.only) && b.only[j+1] == b.only[j]+1 {
			j++
		}
		dst = append(dst, commitmeta.Attempts{From: b.raw.records[b.only[i]].Offset, To: b.raw.records[b.only[j]].Offset + 1, N: n})
		i = j + 1
	}
	return dst
}
