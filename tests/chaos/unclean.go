package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The unclean-election fault (--cluster 3): an unclean leader election
// truncates a partition under records the group may have delivered.
//
// The nodes are combined brokers and controllers, so two of the three must
// run at every moment for the quorum; the fault never stops two at once.
// It takes one partition of the topic, with leader A and a follower B:
//
//  1. no transaction open on the topic (the transactional producer pauses:
//     a marker inside the truncated log would leave a hanging transaction),
//     the topic at min.insync.replicas=1 and
//     unclean.leader.election.enable=true, the partition's replicas reduced
//     to A and B (the third node must not be a clean candidate);
//  2. B frozen (SIGSTOP) until it leaves the ISR: A alone holds what comes;
//  3. records written with acks=1 (A alone acknowledges them; the live
//     producer goes on too), for Hold, while the members deliver them;
//  4. A killed (SIGKILL) and B thawed (SIGCONT) in the same instant, then
//     B elected uncleanly (ElectLeaders, ElectLiveReplica) with the log it
//     had when it was frozen; new records written to it;
//  5. A started again: it finds its log diverged from B's and truncates it.
//
// The cluster must be formatted with eligible leader replicas off (KIP-966,
// on by default in 4.x: it keeps the last ISR member in the ISR and makes
// the controller refuse this election); cluster.go does so whenever this
// kind has a weight. The harness proves the truncation by reading the new
// log back where it wrote to A alone (another record now, or none), reads
// the divergence point from the new leader (OffsetForLeaderEpoch of the old
// leader epoch), and records which offsets were rewritten (truncation,
// losscheck.go). Afterwards the replicas, the configs and the producer are
// restored.

const (
	uncleanOldRecords = 50  // written to A alone
	uncleanNewRecords = 100 // written to B after the election
)

func (h *harness) uncleanElection(ctx context.Context, fr *faultRun) (err error) {
	c, ok := h.kafka.(*cluster)
	if !ok || !c.noELR {
		return errors.New("unclean-election needs --cluster 3 with the kind in --weights")
	}
	p, topic := fr.Part, h.topic
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(c.seeds())...), kgo.ClientID("chaos-unclean"), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// 1. No transaction open, the topic's configs, two replicas.
	h.txn.pause()
	defer h.txn.resume()
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	if err := c.ready(ctx); err != nil {
		return err
	}
	if err := alterTopic(ctx, adm, topic, kadm.SetConfig, map[string]string{"min.insync.replicas": "1", "unclean.leader.election.enable": "true"}); err != nil {
		return err
	}
	defer func() {
		if err := alterTopic(context.Background(), adm, topic, kadm.DeleteConfig, map[string]string{"min.insync.replicas": "", "unclean.leader.election.enable": ""}); err != nil {
			h.note("fault #%d: restore the configs of %s: %v", fr.Index, topic, err)
		}
	}()
	d, err := partitionDetail(ctx, adm, topic, p)
	if err != nil {
		return err
	}
	a := d.Leader
	orig := slices.Clone(d.Replicas)
	b := int32(-1)
	for _, r := range d.Replicas {
		if r != a {
			b = r
			break
		}
	}
	if a < 1 || b < 1 || int(a) > len(c.nodes) || int(b) > len(c.nodes) {
		return fmt.Errorf("partition %d: leader %d, replicas %v: no follower to elect", p, a, d.Replicas)
	}
	nodeA, nodeB := c.nodes[a-1], c.nodes[b-1]
	if err := reassign(ctx, adm, topic, p, []int32{a, b}); err != nil {
		return err
	}
	defer func() {
		// After A is back (the defers run last-in first-out).
		if err := reassign(context.Background(), adm, topic, p, orig); err != nil {
			h.note("fault #%d: restore the replicas %v of partition %d: %v", fr.Index, orig, p, err)
		}
		if err := c.ready(ctx); err != nil {
			h.note("fault #%d: after restoring the replicas: %v", fr.Index, err)
		}
	}()
	if _, err := waitPartition(ctx, adm, topic, p, 2*time.Minute, "replicas and ISR [A B]", func(d kadm.PartitionDetail) bool {
		return slices.Equal(d.Replicas, []int32{a, b}) && len(d.ISR) == 2
	}); err != nil {
		return err
	}

	// 2. B frozen until A alone is in sync.
	if err := c.signal(nodeB, syscall.SIGSTOP); err != nil {
		return err
	}
	thawed := false
	defer func() {
		if !thawed {
			_ = c.signal(nodeB, syscall.SIGCONT)
		}
	}()
	h.logf("fault #%d: node %d (follower of partition %d) frozen", fr.Index, b, p)
	d, err = waitPartition(ctx, adm, topic, p, 3*time.Minute, "ISR [A]", func(d kadm.PartitionDetail) bool {
		return d.Leader == a && slices.Equal(d.ISR, []int32{a})
	})
	if err != nil {
		return err
	}
	oldEpoch := d.LeaderEpoch

	// 3. Records A alone holds.
	old, err := produceTo(ctx, c.seeds(), topic, p, uncleanOldRecords, fmt.Sprintf("U%d-old", fr.Index), kgo.LeaderAck())
	if err != nil {
		return fmt.Errorf("write to the leader alone: %w", err)
	}
	// Hold, and then until the members delivered them (at most 20 s more:
	// a group whose coordinator was on the frozen node takes a while).
	if err := sleepCtx(ctx, fr.Hold); err != nil {
		return err
	}
	oldTo := old[len(old)-1].o + 1
	delivered := func() (n int) {
		for _, r := range old {
			if got, _ := h.sink.receivedIn(p, r.o, r.o+1); got > 0 {
				n++
			}
		}
		return n
	}
	got := delivered()
	for deadline := time.Now().Add(20 * time.Second); got < len(old) && time.Now().Before(deadline); got = delivered() {
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	_, endA, err := listBounds(ctx, adm, topic, p)
	if err != nil {
		return err
	}

	// 4. A killed, B thawed and elected. A's outage is a node restart's:
	// polls may read older commits while a coordinator moves.
	w := window{from: time.Now().UnixNano()}
	c.terminate(nodeA, true)
	aDown := true
	defer func() {
		if aDown {
			if err := c.launch(nodeA); err == nil {
				_ = c.waitServing(context.Background(), nodeA, 4*time.Minute)
			}
			w.to = time.Now().UnixNano()
			c.addWindow(w)
		}
	}()
	if err := c.signal(nodeB, syscall.SIGCONT); err != nil {
		return err
	}
	thawed = true
	h.logf("fault #%d: node %d killed, node %d thawed; the sink had %d of the %d records A alone holds (log end %d)", fr.Index, a, b, got, len(old), endA)
	electedAt, newEpoch, err := electLive(ctx, adm, topic, p, b)
	if err != nil {
		return err
	}
	sinkLast := h.sink.lastReceived(p)
	h.logf("fault #%d: node %d leads partition %d, leader epoch %d -> %d", fr.Index, b, p, oldEpoch, newEpoch)
	if _, err := produceTo(ctx, c.seeds(), topic, p, uncleanNewRecords, fmt.Sprintf("U%d-new", fr.Index), kgo.AllISRAcks()); err != nil {
		return fmt.Errorf("write to the new leader: %w", err)
	}

	// 5. A back: it truncates.
	restarted := time.Now()
	if err := c.launch(nodeA); err != nil {
		return err
	}
	aDown = false
	err = c.waitServing(ctx, nodeA, 4*time.Minute)
	w.to = time.Now().UnixNano()
	c.addWindow(w)
	if err != nil {
		return err
	}
	divergence, err := epochEnd(ctx, adm, topic, p, oldEpoch)
	if err != nil {
		return err
	}

	// The proof: what the new log holds where A alone had records. The old
	// log ended at least at A's end before the kill, past the records the
	// harness wrote there and past what the sink had of p at the election;
	// the live producer's records beyond, if the new log holds another
	// record at their offset, were A's too (those A acknowledged just
	// before the kill), not the new leader's.
	oldEnd := max(endA, oldTo, sinkLast)
	bound := oldEnd
	h.live.mu.Lock()
	for _, r := range h.live.recs {
		if r.p == p && r.o >= bound {
			bound = r.o + 1
		}
	}
	h.live.mu.Unlock()
	_, newEnd, err := listBounds(ctx, adm, topic, p)
	if err != nil {
		return err
	}
	now, err := readRange(ctx, c.seeds(), topic, p, divergence, min(bound, newEnd))
	if err != nil {
		return err
	}
	t := truncation{Fault: fr.Index, P: p, Divergence: divergence, OldEpoch: oldEpoch, NewEpoch: newEpoch,
		ElectedAt: electedAt.UnixNano(), Old: map[int64]uint32{}}
	below := 0
	for _, r := range old {
		if r.o < divergence {
			below++
			continue
		}
		t.Old[r.o] = r.hash
	}
	h.live.mu.Lock()
	for _, r := range h.live.recs {
		if r.p == p && r.o >= divergence && r.o < bound {
			if nh, ok := now[r.o]; !ok || nh != r.hash {
				t.Old[r.o] = r.hash
				oldEnd = max(oldEnd, r.o+1)
			}
		}
	}
	h.live.mu.Unlock()
	t.OldEnd = oldEnd
	for o, hash := range t.Old {
		if nh, ok := now[o]; !ok || nh != hash {
			t.Rewritten++
		}
	}
	t.Proof = fmt.Sprintf("divergence %d (end of leader epoch %d on node %d); %d of %d known records of the old log in [%d,%d) hold another record now (%d written to node %d alone, %d of them below the divergence)",
		divergence, oldEpoch, b, t.Rewritten, len(t.Old), divergence, oldEnd, len(old), a, below)
	if line := truncationLine(filepath.Join(nodeA.dir, "logs", "server.log"), fmt.Sprintf("%s-%d", topic, p), restarted); line != "" {
		t.Proof += "; node " + fmt.Sprint(a) + " logged: " + line
	}
	fr.Note = t.Proof
	h.logf("fault #%d: %s", fr.Index, t.Proof)
	if t.Rewritten == 0 {
		return fmt.Errorf("no truncation: every record written to node %d alone is still in the log (%s)", a, t.Proof)
	}
	h.truncations = append(h.truncations, t)
	return nil
}

// signal sends sig to node n's process.
func (c *cluster) signal(n *node, sig syscall.Signal) error {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil || !n.running() {
		return fmt.Errorf("node %d is not running", n.id)
	}
	return cmd.Process.Signal(sig)
}

// truncationLine is the last line of a node's log, written after since,
// where it truncated the partition (name topic-p), or "".
func truncationLine(path, name string, since time.Time) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, name) && strings.Contains(l, "runcat") && logTime(l).After(since.Add(-time.Second)) {
			last = strings.TrimSpace(l)
		}
	}
	if len(last) > 400 {
		last = last[:400]
	}
	return last
}

// logTime reads the "[2006-01-02 15:04:05,000]" time a Kafka log line
// starts with (local time); the zero time when it has none.
func logTime(l string) time.Time {
	if len(l) < 25 || l[0] != '[' {
		return time.Time{}
	}
	t, err := time.ParseInLocation("2006-01-02 15:04:05,000", l[1:24], time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}
