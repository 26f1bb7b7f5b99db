package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The fault kinds.
const (
	kindStart       = "startup" // the group's first join: not a fault, accounted like one
	kindMemberKill  = "member-kill"
	kindMemberStop  = "member-stop"
	kindBrokerTerm  = "broker-term"
	kindBrokerKill  = "broker-kill"
	kindSinkReverse = "sink-reverse"
	kindSinkSlow    = "sink-slow"
	kindSinkFail    = "sink-fail"
	kindLeaderMove  = "leader-move" // --cluster 3: a forced leader move
	kindMemberCut   = "member-cut"  // --cluster 3: a network cut between a member and the cluster
	// Kafka taking records away (retention.go, unclean.go) and compound
	// faults (compound.go).
	kindRetention       = "retention"        // a stalled partition's log start moved past its watermark
	kindUnclean         = "unclean-election" // --cluster 3: an unclean election truncates a partition
	kindReplayRebalance = "replay-rebalance" // a member leaves or joins while a partition replays in place
	kindKillInOutage    = "kill-in-outage"   // kill -9 of a member while a broker is down
	// Records the sink refuses for the rest of the run, which the members
	// dead-letter (poison.go, deadletters.go).
	kindPoison = "poison"
	// A member stopped (SIGSTOP) past its session timeout and resumed
	// (SIGCONT): a zombie the group has moved on from. --eos only
	// (eos.go): its open transaction must be fenced, not committed.
	kindMemberPause = "member-pause"
)

var allKinds = []string{kindMemberKill, kindMemberStop, kindBrokerTerm, kindBrokerKill, kindSinkReverse, kindSinkSlow, kindSinkFail, kindLeaderMove, kindMemberCut,
	kindRetention, kindUnclean, kindReplayRebalance, kindKillInOutage, kindPoison, kindMemberPause}

// clusterKinds need the 3-node cluster.
var clusterKinds = []string{kindLeaderMove, kindMemberCut, kindUnclean}

// optInKinds are in no default weights: only --weights draws them, so the
// short profile's seeded schedule, and its time, stay as they are. The
// retention and unclean-election faults are checked against the input's
// loss reports (losscheck.go), which a binary before the input's loss
// reporting (b1d103a) does not print; docs/RELIABILITY.md has what their
// first runs found. A run that draws poison gives its members a dead-letter
// topic, which changes what a stall of sink-fail ends in: not in the
// short profile.
var optInKinds = []string{kindRetention, kindUnclean, kindReplayRebalance, kindKillInOutage, kindPoison, kindMemberPause}

// notWithPoison are the kinds a run that draws poison refuses: each makes a
// partition stall by failing the sink and needs the stall to last (a
// deletion above the stalled commit, a membership change at its replay, a
// truncation of what it delivered), where dead_letter would end it after
// deadLetterAttempts deliveries and change what their checks hold.
var notWithPoison = []string{kindRetention, kindReplayRebalance, kindUnclean}

const (
	defaultWeights      = "member-kill=3,member-stop=2,broker-term=1,broker-kill=1,sink-reverse=1,sink-slow=1,sink-fail=1"
	clusterExtraWeights = "leader-move=1,member-cut=2"
)

type weight struct {
	kind string
	w    int
}

func parseWeights(s string) ([]weight, error) {
	var out []weight
	total := 0
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--weights: %q is not kind=weight", kv)
		}
		if !slices.Contains(allKinds, k) {
			return nil, fmt.Errorf("--weights: unknown fault kind %q (kinds: %s)", k, strings.Join(allKinds, ", "))
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--weights: %q: the weight must be a whole number >= 0", kv)
		}
		out = append(out, weight{k, n})
		total += n
	}
	if total == 0 {
		return nil, fmt.Errorf("--weights %q: no fault kind has a weight", s)
	}
	return out, nil
}

// plannedFault is one entry of the seeded schedule. Everything in it comes
// from the seed alone; only when it runs depends on the machine.
type plannedFault struct {
	Index  int           `json:"i"`
	Kind   string        `json:"kind"`
	Gap    time.Duration `json:"-"` // pause before it
	Wait   bool          `json:"waits_for_recovery"`
	Victim string        `json:"victim,omitempty"` // member name
	Part   int32         `json:"partition,omitempty"`
	Hold   time.Duration `json:"-"` // downtime, or how long the sink misbehaves
	// The 3-node cluster only (drawn only there, so that a seed draws the
	// same single-broker schedule whatever the cluster code does).
	Node        int  `json:"node,omitempty"`        // broker faults: the node (0-based)
	Coordinator bool `json:"coordinator,omitempty"` // leader-move: the group coordinator's partition
	clustered   bool
	// The opt-in kinds only, drawn from a generator of their own (aux), so
	// that they never shift the other kinds' draws.
	Variant string        `json:"variant,omitempty"`      // retention: running | down; replay-rebalance: leave-owner | leave-other | join; kill-in-outage: term | kill
	Delay   time.Duration `json:"-"`                      // replay-rebalance: how long the sink still fails after the replay began; kill-in-outage: from the broker down to the kill
	Hold2   time.Duration `json:"-"`                      // kill-in-outage: how long the killed member stays down
	Ahead   []int64       `json:"poison_ahead,omitempty"` // poison: its slots, in offsets past the partition's log end
}

func (f plannedFault) String() string {
	s := fmt.Sprintf("#%d %s", f.Index, f.Kind)
	switch f.Kind {
	case kindMemberKill, kindMemberStop:
		s += fmt.Sprintf(" %s, down %v", f.Victim, f.Hold)
	case kindMemberPause:
		s += fmt.Sprintf(" %s, stopped %v", f.Victim, f.Hold)
	case kindBrokerTerm, kindBrokerKill:
		if f.Node > 0 || f.clustered {
			s += fmt.Sprintf(" node %d", f.Node+1)
		}
		s += fmt.Sprintf(", down %v + restart", f.Hold)
	case kindMemberCut:
		s += fmt.Sprintf(" %s for %v", f.Victim, f.Hold)
	case kindLeaderMove:
		if f.Coordinator {
			s += " of the group coordinator"
		} else {
			s += fmt.Sprintf(" of partitions from %d", f.Part)
		}
	case kindSinkFail:
		s += fmt.Sprintf(" partition %d for %v", f.Part, f.Hold)
	case kindSinkReverse, kindSinkSlow:
		s += fmt.Sprintf(" for %v", f.Hold)
	case kindRetention:
		s += fmt.Sprintf(" partition %d, members %s, sink failing %v after the deletion", f.Part, f.Variant, f.Hold)
	case kindUnclean:
		s += fmt.Sprintf(" partition %d, %v of writes only its leader holds", f.Part, f.Hold)
	case kindReplayRebalance:
		s += fmt.Sprintf(" partition %d, %s (%s), sink failing %v into the replay", f.Part, f.Variant, f.Victim, f.Delay)
		if f.Variant != "join" {
			s += fmt.Sprintf(", down %v", f.Hold)
		}
	case kindKillInOutage:
		if f.clustered {
			s += fmt.Sprintf(" node %d", f.Node+1)
		}
		s += fmt.Sprintf(" broker %s, down %v + restart; %s killed %v into the outage, down %v", f.Variant, f.Hold, f.Victim, f.Delay, f.Hold2)
	case kindPoison:
		s += fmt.Sprintf(" partition %d, records %v past its log end refused for the rest of the run", f.Part, f.Ahead)
	}
	s += fmt.Sprintf(", after a gap of %v", f.Gap)
	if !f.Wait {
		s += " without waiting for the previous recovery"
	}
	return s
}

// schedule draws faults from a seeded generator.
type schedule struct {
	rng     *rand.Rand
	aux     *rand.Rand // the opt-in kinds' own parameters
	weights []weight
	total   int
	members int
	parts   int
	gap     time.Duration
	overlap float64
	nodes   int
	n       int
}

func newSchedule(seed uint64, weights []weight, members, parts, nodes int, gap time.Duration, overlap float64) *schedule {
	s := &schedule{rng: rand.New(rand.NewPCG(seed, 0x6661756c74)), aux: rand.New(rand.NewPCG(seed, 0x6f7074696e)),
		weights: weights, members: members, parts: parts, nodes: nodes, gap: gap, overlap: overlap}
	for _, w := range weights {
		s.total += w.w
	}
	return s
}

// next draws the next fault. It draws the same number of values whatever
// the kind, so one kind's parameters never shift the next fault's.
func (s *schedule) next() plannedFault {
	s.n++
	pick := s.rng.IntN(s.total)
	kind := ""
	for _, w := range s.weights {
		if pick < w.w {
			kind = w.kind
			break
		}
		pick -= w.w
	}
	f := plannedFault{Index: s.n, Kind: kind}
	f.Gap = (time.Duration(float64(s.gap) * (0.25 + 1.5*s.rng.Float64()))).Round(100 * time.Millisecond)
	f.Wait = s.rng.Float64() >= s.overlap
	victim := s.rng.IntN(s.members)
	part := int32(s.rng.IntN(s.parts))
	u := s.rng.Float64()
	node, coord := 0, false
	if s.nodes > 1 {
		f.clustered = true
		node, coord = s.rng.IntN(s.nodes), s.rng.Float64() < 0.5
	}
	span := func(lo, hi time.Duration) time.Duration {
		return (lo + time.Duration(u*float64(hi-lo))).Round(100 * time.Millisecond)
	}
	switch kind {
	case kindMemberKill:
		f.Victim, f.Hold = memberName(victim), span(500*time.Millisecond, 8*time.Second)
	case kindMemberStop:
		f.Victim, f.Hold = memberName(victim), span(time.Second, 6*time.Second)
	case kindMemberPause:
		// Past the members' 6s session timeout, and on the long side past
		// their 20s transaction_timeout too: then the transaction
		// coordinator aborts the zombie's transaction before it resumes.
		f.Victim, f.Hold = memberName(victim), span(8*time.Second, 24*time.Second)
	case kindBrokerTerm, kindBrokerKill:
		f.Node, f.Hold = node, span(0, 5*time.Second)
	case kindLeaderMove:
		f.Coordinator, f.Part = coord, part
	case kindMemberCut:
		f.Victim, f.Hold = memberName(victim), span(5*time.Second, 20*time.Second)
	case kindSinkReverse:
		f.Hold = span(5*time.Second, 20*time.Second)
	case kindSinkSlow:
		f.Hold = span(10*time.Second, 25*time.Second)
	case kindSinkFail:
		f.Part, f.Hold = part, span(3*time.Second, 15*time.Second)
	case kindRetention:
		f.Part, f.Hold = part, span(time.Second, 5*time.Second)
		f.Variant = []string{"running", "down"}[s.aux.IntN(2)]
	case kindUnclean:
		f.Part, f.Hold = part, span(2*time.Second, 5*time.Second)
	case kindReplayRebalance:
		f.Part, f.Victim, f.Hold = part, memberName(victim), span(time.Second, 6*time.Second)
		f.Variant = []string{"leave-owner", "leave-other", "join"}[s.aux.IntN(3)]
		f.Delay = (time.Duration(s.aux.Float64() * float64(2*time.Second))).Round(100 * time.Millisecond)
	case kindKillInOutage:
		f.Node, f.Victim, f.Hold = node, memberName(victim), span(time.Second, 5*time.Second)
		f.Variant = []string{"term", "kill"}[s.aux.IntN(2)]
		f.Delay = (time.Duration(s.aux.Float64() * float64(2*time.Second))).Round(100 * time.Millisecond)
		f.Hold2 = (500*time.Millisecond + time.Duration(s.aux.Float64()*float64(5500*time.Millisecond))).Round(100 * time.Millisecond)
	case kindPoison:
		f.Part, f.Ahead = part, drawPoison(s.aux)
	}
	return f
}

func memberName(i int) string { return fmt.Sprintf("m%d", i+1) }

// memberIndex is the inverse of memberName.
func memberIndex(name string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "m"))
	return i - 1
}

// execute runs one fault's action, from its start to its end (the victim
// back, the broker serving again, the sink normal).
func (h *harness) execute(ctx context.Context, pf plannedFault) *faultRun {
	if pf.Kind == kindBrokerTerm || pf.Kind == kindBrokerKill || pf.Kind == kindKillInOutage || pf.Kind == kindUnclean {
		// One broker at a time: the last restart has fully healed.
		if err := h.kafka.ready(ctx); err != nil {
			h.note("before fault #%d: %v", pf.Index, err)
		}
	}
	fr := &faultRun{plannedFault: pf, Before: h.poller.snapshot()}
	fr.At = time.Now().UnixNano()
	h.logf("fault %s", pf)
	if m := h.fleet.get(pf.Victim); m != nil {
		fr.VictimInstance = m.instance
	}
	var err error
	switch pf.Kind {
	case kindMemberKill:
		if err = h.fleet.kill(pf.Victim); err == nil {
			if err = sleepCtx(ctx, pf.Hold); err == nil {
				_, err = h.fleet.start(pf.Victim)
			}
		}
	case kindMemberStop:
		if err = h.fleet.stop(pf.Victim, 90*time.Second); err == nil {
			if err = sleepCtx(ctx, pf.Hold); err == nil {
				_, err = h.fleet.start(pf.Victim)
			}
		}
	case kindBrokerTerm, kindBrokerKill:
		err = h.kafka.restart(ctx, pf.Node, pf.Kind == kindBrokerKill, pf.Hold)
	case kindMemberPause:
		err = h.fleet.pause(ctx, pf.Victim, pf.Hold)
	case kindLeaderMove:
		c := h.kafka.(*cluster)
		var moved string
		moved, err = c.moveLeaders(ctx, h.topic, h.group, pf.Coordinator, pf.Part, h.opts.partitions)
		fr.Note = moved
		h.logf("fault #%d: moved %s", pf.Index, moved)
		if pf.Coordinator {
			// The new coordinator loads the group: polls may read an older
			// commit for a moment, as after a restart.
			defer func() { c.addWindow(window{from: fr.At, to: fr.End}) }()
		}
	case kindMemberCut:
		c := h.kafka.(*cluster)
		i := memberIndex(pf.Victim)
		c.cut(i, true)
		err = sleepCtx(ctx, pf.Hold)
		c.cut(i, false)
	case kindSinkReverse, kindSinkSlow, kindSinkFail:
		m := sinkMode{kind: strings.TrimPrefix(pf.Kind, "sink-"), failPart: pf.Part}
		if pf.Kind == kindSinkSlow {
			// Well below the production rate: a backlog builds, the members'
			// in-flight requests queue and partitions reach
			// max_pending_batches and pause.
			m.rate = max(20, 0.4*float64(h.opts.rate+h.opts.txnRate))
		}
		h.sink.setMode(m)
		err = sleepCtx(ctx, pf.Hold)
		h.sink.setMode(sinkMode{kind: "normal"})
	case kindRetention:
		err = h.retention(ctx, fr)
	case kindUnclean:
		err = h.uncleanElection(ctx, fr)
	case kindReplayRebalance:
		err = h.replayRebalance(ctx, fr)
	case kindKillInOutage:
		err = h.killInOutage(ctx, fr)
	case kindPoison:
		err = h.poison(ctx, fr)
	}
	if err != nil {
		fr.Err = err.Error()
		h.logf("fault #%d: %v", pf.Index, err)
	}
	fr.End = time.Now().UnixNano()
	fr.AtEnd = h.poller.snapshot()
	return fr
}
