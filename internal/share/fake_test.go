package share

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fakeRecord models the ack state kgo keeps for one share record
// (shareAckState.tryAck, consumer_share.go:2175-2189 in kgo v1.22.3): a
// renewal takes only a record without a status; a terminal status takes a
// record without one or with a renewal, never another terminal one.
// confirm models the broker's answer to a renewal, which clears it
// (consumer_share.go:1870-1874). Safe for concurrent use.
type fakeRecord struct {
	mu       sync.Mutex
	status   kgo.AckStatus
	renewals int
	terminal []kgo.AckStatus // every terminal status kgo took, in order
	auto     bool            // accepted by the next poll's auto-accept
}

func (r *fakeRecord) Ack(s kgo.AckStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ack(s)
}

func (r *fakeRecord) ack(s kgo.AckStatus) bool {
	if s == kgo.AckRenew {
		if r.status != 0 {
			return false
		}
		r.status = s
		r.renewals++
		return true
	}
	if r.status != 0 && r.status != kgo.AckRenew {
		return false
	}
	r.status = s
	r.terminal = append(r.terminal, s)
	return true
}

// confirmRenew is the broker answering a renewal.
func (r *fakeRecord) confirmRenew() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == kgo.AckRenew {
		r.status = 0
	}
}

// finalize is kgo's finalizePreviousPoll on this record: accept it if it
// has no terminal status. It reports whether it did (the trap sprung).
func (r *fakeRecord) finalize() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ack(kgo.AckAccept) {
		r.auto = true
		return true
	}
	return false
}

func (r *fakeRecord) snapshot() (kgo.AckStatus, []kgo.AckStatus, int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, append([]kgo.AckStatus(nil), r.terminal...), r.renewals, r.auto
}

// fakeRecords makes n fake records, as Ackers and as themselves.
func fakeRecords(n int) ([]Acker, []*fakeRecord) {
	recs := make([]*fakeRecord, n)
	ackers := make([]Acker, n)
	for i := range recs {
		recs[i] = &fakeRecord{}
		ackers[i] = recs[i]
	}
	return ackers, recs
}
