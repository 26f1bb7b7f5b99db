package main

import (
	"fmt"
	"math"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// faultRun is one fault as it was run (index 0 is the start of the group).
type faultRun struct {
	plannedFault
	VictimInstance string   // the member process the fault hit
	At             int64    // Unix ns: when it began
	End            int64    // when its action was over (the victim back, the sink normal)
	Before         snapshot // the commits polled last before At
	AtEnd          snapshot // the commits polled last before End
	Err            string
	Note           string
	Recovered      int64 // computed: when every partition committed again after End (0: never)
}

// faultResult is the accounting of one fault.
type faultResult struct {
	Duplicates int64   `json:"duplicates"`
	Exposure   int64   `json:"exposure"`
	Outside    int64   `json:"outside_replay"` // duplicates below the commit or inside its ranges
	RecoveryS  float64 `json:"recovery_s"`     // -1: commits did not move again before the next fault / the end
	MaxAgeS    float64 `json:"max_watermark_age_s"`
	MaxPaused  int     `json:"max_paused_partitions"`
	MaxStalled int     `json:"max_stalled_partitions"`
	// Sources breaks the duplicates down: "first deliverer -> repeat
	// deliverer, first delivered before|during|after the fault".
	Sources map[string]int64 `json:"duplicate_sources,omitempty"`
}

// accounting is everything the checker concludes.
type accounting struct {
	Records         int64
	Aborted         int64
	Markers         int64
	Received        int64 // distinct visible records received
	Deliveries      int64
	Lost            int64
	LostExamples    []string
	AbortedReceived int64
	Phantom         int64 // received offsets that hold no visible record
	Corrupt         int64
	Deleted         int64 // offsets below the log start at the end
	DeletedReceived int64 // of those, offsets received before they went
	BadExamples     []string
	Violations      []string
	ViolationsN     int64
	BackwardLog     []string
	BackwardPolled  []string
	StaleReads      int64
	// TxnOutcomeAcrossOutage: as the report field of that name (report.go).
	TxnOutcomeAcrossOutage int
	Duplicates             int64
	Exposure               int64
	Faults                 []faultResult
	MaxAgeS                float64
	MaxAgeWhere            string
	Audited                int // OffsetCommit records read from the log
	StallsInCommits        int // distinct stalls (partition, failed batch) the polled commits carried
	RangesChecked          int64
	BackSteps              int // backward commits a truncation allowed (in the log and polled)
	Loss                   lossResult
	LossMetrics            []string          // loss counters that disagree with the loss lines
	DeadLetters            *deadLetterResult // nil: no dead-letter topic
	KeyOrder               *keyOrderResult   // nil: no key check (keyorder.go)
	EOS                    *eosResult        // nil: not an --eos run (eos.go)
}

// staleGrace is how long after a broker is back a poll may still read an
// older commit (the coordinator still loading __consumer_offsets; see the
// broker notes): such a poll is a stale read, not a backward commit. The
// commit log audit has no such allowance.
const staleGrace = 20 * time.Second

const maxExamples = 20

func (a *accounting) violation(format string, args ...any) {
	a.ViolationsN++
	if len(a.Violations) < maxExamples {
		a.Violations = append(a.Violations, fmt.Sprintf(format, args...))
	}
}

// account checks the guarantee against the log read back, the sink's
// ledger, the commits polled and the commit log, and counts duplicates and
// exposure per fault. facts (nil: none) is what the harness itself did to
// the log: records it deleted are not expected to be delivered, and offsets
// an unclean election rewrote hold an old record (delivered or not) and a
// new one (which must be delivered). dl (nil: none) is the dead-letter
// topic: a record there with its provenance right is delivered from when it
// was appended.
func account(lg [][]logRec, ld *testkit.Ledger, hist [][]commitObs, backs []backObs, audit []auditRec,
	outages []window, faults []*faultRun, paused []pausedObs, runEnd int64, facts *lossFacts, dl *deadLetterFacts) *accounting {
	c := newChecker(lg, ld, facts, dl)
	c.deadLetters()
	c.records()
	c.polled(hist)
	c.commitLog(audit)
	c.backward(hist, backs, outages)
	c.faults(hist, faults, paused, runEnd, ld)
	c.ages(hist, faults)
	return c.a
}

// checker is one run of account: its inputs, the lookups its checks share,
// and the accounting they fill in. Every check reads the log read back
// (lg) and the sink's ledger; none changes them.
type checker struct {
	a      *accounting
	lg     [][]logRec
	ledger [][]testkit.Entry
	// alts are the ledger's deliveries of another value than the first, by
	// partition and offset.
	alts  map[[2]int64][]testkit.Alt
	facts *lossFacts
	// dl is the dead-letter topic (nil: none); dead, when the first dead
	// letter of each record with its provenance right was appended.
	dl   *deadLetterFacts
	dead map[[2]int64]int64
	// complete[p][c]: when every visible record below c had been delivered,
	// to the sink or to the dead-letter topic (Unix ns; MaxInt64 when one
	// never was). A visible record the harness
	// deleted counts from when it was received or deleted, whichever came
	// first: a commit may pass it once it is gone.
	complete [][]int64
}

func newChecker(lg [][]logRec, ld *testkit.Ledger, facts *lossFacts, dl *deadLetterFacts) *checker {
	c := &checker{a: &accounting{}, lg: lg, ledger: ld.Parts, alts: map[[2]int64][]testkit.Alt{}, facts: facts, dl: dl, dead: dl.delivered(lg)}
	for _, d := range ld.Alts {
		k := [2]int64{int64(d.P), d.O}
		c.alts[k] = append(c.alts[k], d)
	}
	c.complete = make([][]int64, len(lg))
	for p := range lg {
		cp := make([]int64, len(lg[p])+1)
		for o, r := range lg[p] {
			t := int64(0)
			switch {
			case r.kind == offData:
				t = c.deliveredAt(p, int64(o), r.hash)
			case r.kind == offDeleted && r.was == offData && r.gone > 0:
				t = r.gone
				if e := c.at(p, int64(o)); e.Count > 0 {
					t = min(t, e.FirstAck)
				}
			}
			cp[o+1] = max(cp[o], t)
		}
		c.complete[p] = cp
	}
	return c
}

// at is the ledger's entry of p/o (zero when never delivered).
func (c *checker) at(p int, o int64) testkit.Entry {
	if p < len(c.ledger) && o >= 0 && o < int64(len(c.ledger[p])) {
		return c.ledger[p][o]
	}
	return testkit.Entry{}
}

// acked is when the value the log holds at p/o was first received (Unix
// ns; MaxInt64 when it never was): the first delivery, or a later one with
// another value than the first (an offset an unclean election rewrote).
func (c *checker) acked(p int, o int64, hash uint32) int64 {
	e := c.at(p, o)
	if e.Count > 0 && e.Hash == hash {
		return e.FirstAck
	}
	t := int64(math.MaxInt64)
	for _, d := range c.alts[[2]int64{int64(p), o}] {
		if d.Hash == hash {
			t = min(t, d.At)
		}
	}
	return t
}

// onlyOld: every value delivered at p/o is a record of the old log that an
// unclean election rewrote (whatever the new log holds there now: even a
// marker or an aborted record).
func (c *checker) onlyOld(p int, o int64, e testkit.Entry) bool {
	if e.Count == 0 || !c.facts.oldValue(p, o, e.Hash, e.FirstArrive) {
		return false
	}
	for _, d := range c.alts[[2]int64{int64(p), o}] {
		if !c.facts.oldValue(p, o, d.Hash, d.At) {
			return false
		}
	}
	return true
}

// records checks every offset of the log read back against the ledger:
// records, lost, aborted received, phantoms, corruption.
func (c *checker) records() {
	a, lg, facts := c.a, c.lg, c.facts
	for p := range lg {
		for o, r := range lg[p] {
			e := c.at(p, int64(o))
			switch r.kind {
			case offData:
				a.Records++
				switch {
				case c.acked(p, int64(o), r.hash) != math.MaxInt64:
					a.Received++
				case c.deliveredAt(p, int64(o), r.hash) != math.MaxInt64:
					// Dead-lettered only (deadLetterResult.Only).
				default:
					a.Lost++
					if len(a.LostExamples) < maxExamples {
						what := fmt.Sprintf("%d/%d", p, o)
						if e.Count > 0 {
							what += " (only another value was delivered)"
						}
						a.LostExamples = append(a.LostExamples, what)
					}
				}
				if e.Count > 0 && e.Hash != r.hash && !facts.oldValue(p, int64(o), e.Hash, e.FirstArrive) {
					a.Corrupt++
					a.bad("%d/%d received with another value than the log holds", p, o)
				}
				for _, d := range c.alts[[2]int64{int64(p), int64(o)}] {
					if d.Hash != r.hash && !facts.oldValue(p, int64(o), d.Hash, d.At) {
						a.Corrupt++
						a.bad("%d/%d received again with another value than the log holds", p, o)
					}
				}
			case offDeleted:
				a.Deleted++
				if e.Count > 0 {
					a.DeletedReceived++
				}
			case offAborted:
				a.Aborted++
				if e.Count > 0 && !c.onlyOld(p, int64(o), e) {
					a.AbortedReceived++
					a.bad("%d/%d is a record of an aborted transaction, received %d time(s)", p, o, e.Count)
				}
			case offMarker:
				a.Markers++
				if e.Count > 0 && !c.onlyOld(p, int64(o), e) {
					a.Phantom++
					a.bad("%d/%d is a transaction marker, received %d time(s)", p, o, e.Count)
				}
			default:
				if e.Count > 0 && !c.onlyOld(p, int64(o), e) {
					a.Phantom++
					a.bad("%d/%d was not read back from the log, received %d time(s)", p, o, e.Count)
				}
			}
		}
		if p >= len(c.ledger) {
			continue
		}
		for o := int64(len(lg[p])); o < int64(len(c.ledger[p])); o++ {
			if c.ledger[p][o].Count > 0 && facts.rewritten(p, o) == nil {
				a.Phantom++
				a.bad("%d/%d is past the log end %d, received", p, o, len(lg[p]))
			}
		}
		for o := range c.ledger[p] {
			a.Deliveries += int64(c.ledger[p][o].Count)
		}
	}
}

func (a *accounting) bad(format string, args ...any) {
	if len(a.BadExamples) < maxExamples {
		a.BadExamples = append(a.BadExamples, fmt.Sprintf(format, args...))
	}
}

func fmtTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("15:04:05.000")
}
