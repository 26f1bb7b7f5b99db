package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The report's markdown (chaos-report.md), and the environment it names.

// kindOrder is the order of the kinds in tables.
var kindOrder = append([]string{kindStart}, allKinds...)

func markdown(r *report) string {
	var b strings.Builder
	verdict := "**PASS**"
	if !r.Passed {
		verdict = "**FAIL**"
	}
	fmt.Fprintf(&b, "# Chaos run, seed %d: %s\n\n", r.Seed, verdict)
	fmt.Fprintf(&b, "`%s`\n\n", r.Command)
	fmt.Fprintf(&b, "%d member(s), %s protocol (group type `%s`), %d partitions, %d broker(s); faults for %.0f s, %.0f s in all.\n\n",
		r.Members, r.Protocol, r.GroupType, r.Partitions, r.Cluster, r.DurationS, r.TookS)
	if r.Error != "" {
		fmt.Fprintf(&b, "Harness error: `%s`\n\n", r.Error)
	}
	if len(r.Failures) > 0 {
		b.WriteString("## Failures\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Summary\n\n| figure | value |\n| --- | --- |\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	if r.EOS != nil {
		eosSummary(row, r)
	} else {
		row("faults", r.Faults)
		row("kill -9 cycles / broker restarts / rebalances seen", fmt.Sprintf("%d / %d / %d", r.KillCycles, r.BrokerRestarts, r.Rebalances))
		if r.Cluster > 1 {
			row("leader moves / network cuts", fmt.Sprintf("%d / %d", r.LeaderMoves, r.NetworkCuts))
		}
		row("records (visible in the log)", r.Records)
		row("records written (with aborted ones)", r.Produced.ProducedRecords)
		row("aborted records / transaction markers", fmt.Sprintf("%d / %d", r.Aborted, r.Markers))
		row("received (distinct) / deliveries", fmt.Sprintf("%d / %d", r.Received, r.Deliveries))
		row("**lost** (must be 0)", r.Lost)
		row("**commit violations** (must be 0)", r.Violations)
		row("**backward commits** (must be 0): in the log / polled", fmt.Sprintf("%d: %d / %d", r.Backward, r.BackwardLog, r.BackwardPolled))
		row("aborted records received (must be 0)", r.AbortedReceived)
		row("duplicates / exposure", fmt.Sprintf("%d / %d", r.Duplicates, r.Exposure))
		row("stale reads right after a broker restart (tolerated)", r.StaleReads)
		if r.TxnOutcomeAcrossOutage > 0 {
			row("records of transactions kgo said committed, across a broker outage, aborted in the log (tolerated; the producer's, not the input's)", r.TxnOutcomeAcrossOutage)
		}
		row("largest watermark age", fmt.Sprintf("%.1f s (%s)", r.MaxAgeS, r.MaxAgeWhere))
		row("slowest recovery (fault to commits moving again)", fmt.Sprintf("%.1f s (%s)", r.SlowestRecoveryS, r.SlowestRecovery))
		row("commits checked: polled distinct / OffsetCommit records in __consumer_offsets", fmt.Sprintf("%d / %d", r.PolledCommits, r.Audited))
		row("stalls carried in commit metadata", r.StallsInCommits)
		row("most partitions paused at once (max_pending_batches)", r.MaxPaused)
		row("acks out of order (a batch after a later one of its partition)", r.OutOfOrderAcks)
		row("sink requests failed on purpose / cut by a dying member", fmt.Sprintf("%d / %d", r.SinkFailed, r.SinkAborted))
		row("**reported lost** (must equal the offsets deleted before any sink had them)", fmt.Sprintf("%d / %d", r.ReportedLost, r.ExpectedLost))
		row("offsets deleted by the harness: received before / at or above the commit and never received (expected lost)",
			fmt.Sprintf("%d: %d / %d", r.Losses.Deleted, r.Losses.DeletedReceived, r.Losses.Expected))
		if len(r.Truncations) > 0 || r.Losses.ReportedTrunc > 0 {
			row("offsets rewritten by unclean elections: old records delivered / never delivered; reported truncated; reported lost (truncation)",
				fmt.Sprintf("%d: %d / %d; %d; %d", r.Losses.Rewritten, r.Losses.TruncDelivered, r.Losses.TruncNeverSeen, r.Losses.ReportedTrunc, r.Losses.ReportedTrLost))
			row("backward commits allowed by a truncation (one each at most)", r.BackSteps)
		}
		if d := r.DeadLetters; d != nil {
			row("**dead letters** in "+r.DeadLetterTopic+": records (provenance right) / copies / most copies of one / never in the sink",
				fmt.Sprintf("%d / %d / %d / %d", d.Records, d.Copies, d.MaxCopies, d.Only))
			row("**dead letters with a wrong provenance / never refused by the sink** (must be 0)", fmt.Sprintf("%d / %d", d.BadProvenance, d.Unrefused))
			row("poison records: slots / bound / dead-lettered / **missing** (must be 0) / in the sink (must be 0)",
				fmt.Sprintf("%d / %d / %d / %d / %d", d.Slots, d.Poison, d.PoisonDead, d.PoisonMissing, d.PoisonInSink))
			row("dead-lettered records that are not poison: refused beside a poison record / refused by other faults; offsets the sink refused or answered late",
				fmt.Sprintf("%d / %d; %d", d.Beside, d.RefusedOther, d.Refused))
			row("records the members logged dead-lettered (at most the copies)", d.Logged)
		}
		if k := r.KeyOrder; k != nil {
			row("key order ("+r.Ordering+"): keyed records (empty key) / null-key records / (partition, key) / requests / requests with 2+ records of a key",
				fmt.Sprintf("%d (%d) / %d / %d / %d / %d", k.Keyed, k.EmptyKey, k.NullKey, k.Keys, k.Requests, k.SameKeyRequests))
			row("**key order: first deliveries out of key order / records in overlapping same-key requests of a process / out of order in a request** (must be 0)",
				fmt.Sprintf("%d / %d / %d", k.FirstOrder, k.Overlaps, k.InRequest))
			row("deliveries again of a record after a newer record of its key (allowed: at-least-once)", k.OlderAgain)
			row("requests arriving within 10 ms of the answer to their process's previous request holding one of their keys (how close the overlap check came)", k.FollowedClosely)
		}
		row("member logs: partitions lost / stalls / replays in place / skipped records / drain timeouts / commit failures",
			fmt.Sprintf("%d / %d / %d / %d / %d / %d", r.Logs.Lost, r.Logs.Stalled, r.Logs.Replays, r.Logs.Skipped, r.Logs.DrainTimeout, r.Logs.CommitFailed))
		row("producers: live acked / failed; transactions committed / aborted / failed",
			fmt.Sprintf("%d / %d; %d / %d / %d", r.Produced.LiveAcked, r.Produced.LiveFailed, r.Produced.TxnCommitted, r.Produced.TxnAborted, r.Produced.TxnFailed))
		row("time taken", fmt.Sprintf("%.0f s", r.TookS))
	}

	b.WriteString("\n## Faults by kind\n\n| kind | count | duplicates | exposure | outside replay | max recovery s | unrecovered | max watermark age s | max paused |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, k := range kindOrder {
		kr := r.ByFault[k]
		if kr == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.1f | %d | %.1f | %d |\n", k, kr.Count, kr.Duplicates, kr.Exposure, kr.Outside, kr.MaxRecoveryS, kr.Unrecovered, kr.MaxAgeS, kr.MaxPaused)
	}
	if r.EOS != nil {
		b.WriteString("\nDuplicates: outputs beyond the first of a source record, in the window of the fault during which they were produced; with exactly once there is no exposure, every duplicate fails the run.\n")
	} else {
		b.WriteString("\nExposure: the records received above the last commit polled before the fault, less those in that commit's delivered ranges, counted up to the recovery. Outside replay: duplicates below that commit or inside its ranges (a restart from it should not have delivered them again). Unrecovered: the next fault (one drawn not to wait) began before every partition had committed again; a fault that never recovers shows in the drain.\n")
	}

	b.WriteString("\n## Schedule (seeded) and what it did\n\n| # | kind | parameters | at s | action s | recovery s | duplicates | exposure | outside | max age s | paused | note |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.Schedule {
		params := ""
		switch f.Kind {
		case kindMemberKill, kindMemberStop:
			params = fmt.Sprintf("%s, down %.1fs", f.Victim, f.HoldS)
		case kindMemberPause:
			params = fmt.Sprintf("%s stopped (SIGSTOP) %.1fs", f.Victim, f.HoldS)
		case kindBrokerTerm, kindBrokerKill:
			params = fmt.Sprintf("down %.1fs", f.HoldS)
			if r.Cluster > 1 {
				params = fmt.Sprintf("node %d, %s", f.Node+1, params)
			}
		case kindMemberCut:
			params = fmt.Sprintf("%s cut off for %.1fs", f.Victim, f.HoldS)
		case kindLeaderMove:
			params = "3 partitions of the topic"
			if f.Coordinator {
				params = "the group coordinator"
			}
		case kindSinkFail:
			params = fmt.Sprintf("partition %d, %.1fs", f.Part, f.HoldS)
		case kindSinkReverse, kindSinkSlow:
			params = fmt.Sprintf("%.1fs", f.HoldS)
		case kindRetention:
			params = fmt.Sprintf("partition %d, members %s, %.1fs", f.Part, f.Variant, f.HoldS)
		case kindUnclean:
			params = fmt.Sprintf("partition %d, %.1fs of writes to the leader alone", f.Part, f.HoldS)
		case kindReplayRebalance:
			params = fmt.Sprintf("partition %d, %s %s, down %.1fs", f.Part, f.Variant, f.Victim, f.HoldS)
		case kindKillInOutage:
			params = fmt.Sprintf("broker %s, down %.1fs; %s killed", f.Variant, f.HoldS, f.Victim)
			if r.Cluster > 1 {
				params = fmt.Sprintf("node %d, %s", f.Node+1, params)
			}
		case kindPoison:
			params = fmt.Sprintf("partition %d, %d record(s) past its log end", f.Part, len(f.Ahead))
		}
		if f.Kind != kindStart {
			params += fmt.Sprintf("; gap %.1fs", f.GapS)
			if !f.Wait {
				params += ", overlaps"
			}
		}
		rec := fmt.Sprintf("%.1f", f.RecoveryS)
		if f.RecoveryS < 0 {
			rec = "— (next fault first)"
		}
		note := strings.TrimSpace(f.Err + " " + f.Note)
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %.1f | %s | %d | %d | %d | %.1f | %d | %s |\n",
			f.Index, f.Kind, params, f.AtS, f.ActionS, rec, f.Duplicates, f.Exposure, f.Outside, f.MaxAgeS, f.MaxPaused, strings.ReplaceAll(note, "|", "/"))
	}
	for _, f := range r.Schedule {
		if f.Duplicates > f.Exposure || f.Outside > 0 {
			fmt.Fprintf(&b, "\n## Duplicates of fault #%d (%s) by source\n\n", f.Index, f.Kind)
			for _, k := range slices.Sorted(maps.Keys(f.Sources)) {
				fmt.Fprintf(&b, "- %s: %d\n", k, f.Sources[k])
			}
		}
	}
	if k := r.KeyOrder; k != nil && len(k.Examples) > 0 {
		b.WriteString("\n## Key order held against the run\n\n")
		for _, e := range k.Examples {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if k := r.KeyOrder; k != nil && len(k.AgainExamples) > 0 {
		b.WriteString("\n## Deliveries again after a newer record of their key (allowed)\n\n")
		for _, e := range k.AgainExamples {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if d := r.DeadLetters; d != nil && len(d.Examples) > 0 {
		fmt.Fprintf(&b, "\n## Dead letters held against the run (%s)\n\n", r.DeadLetterTopic)
		for _, e := range d.Examples {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	if len(r.Deletions) > 0 || len(r.Truncations) > 0 || len(r.Logs.Losses) > 0 {
		b.WriteString("\n## Records Kafka took away\n\n")
		for _, d := range r.Deletions {
			down := "running"
			if d.Down {
				down = "down"
			}
			fmt.Fprintf(&b, "- fault #%d: partition %d, log start %d -> %d (commit %d, log end %d, members %s): %d offset(s) deleted before any sink had them %v, %d after delivery\n",
				d.Fault, d.P, d.From, d.To, d.Commit, d.End, down, spansLen(d.Unreceived), d.Unreceived, d.Received)
		}
		for _, t := range r.Truncations {
			fmt.Fprintf(&b, "- fault #%d: partition %d truncated: %s\n", t.Fault, t.P, t.Proof)
		}
		for _, e := range r.Logs.Losses {
			fmt.Fprintf(&b, "- reported by %s\n", e)
		}
		for _, n := range r.Losses.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		for _, n := range r.Losses.Overlaps {
			fmt.Fprintf(&b, "- overlapping reports: %s\n", n)
		}
		if r.Losses.LaterDelivered > 0 {
			fmt.Fprintf(&b, "- %d offset(s) deleted before any sink had them were delivered afterwards (from a member's memory): not expected in the reports\n", r.Losses.LaterDelivered)
		}
	}
	if e := r.EOS; e != nil && len(e.Examples) > 0 {
		fmt.Fprintf(&b, "\n## Exactly once held against the output (%s)\n\n", e.OutputTopic)
		for _, x := range e.Examples {
			fmt.Fprintf(&b, "- %s\n", x)
		}
	}
	if len(r.Violation) > 0 || len(r.Backwards) > 0 || len(r.LostAt) > 0 || len(r.Bad) > 0 {
		b.WriteString("\n## Examples\n\n")
		for _, s := range r.Violation {
			fmt.Fprintf(&b, "- violation: %s\n", s)
		}
		for _, s := range r.Backwards {
			fmt.Fprintf(&b, "- backward: %s\n", s)
		}
		for _, s := range r.LostAt {
			fmt.Fprintf(&b, "- lost: %s\n", s)
		}
		for _, s := range r.Bad {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	b.WriteString("\n## Environment\n\n")
	for _, k := range slices.Sorted(maps.Keys(r.Env)) {
		fmt.Fprintf(&b, "- %s: %s\n", k, r.Env[k])
	}
	return b.String()
}

// environment describes the machine and the versions.
func environment(h *harness) map[string]string {
	env := map[string]string{
		"go":      runtime.Version(),
		"cpus":    fmt.Sprint(runtime.NumCPU()),
		"os":      runtime.GOOS + "/" + runtime.GOARCH,
		"binary":  h.binary,
		"source":  h.opts.source,
		"started": h.began.UTC().Format(time.RFC3339),
	}
	out := func(name string, args ...string) string {
		c := exec.Command(name, args...)
		c.Dir = h.root
		var buf bytes.Buffer
		c.Stdout, c.Stderr = &buf, &buf
		if c.Run() != nil {
			return ""
		}
		return strings.TrimSpace(strings.SplitN(buf.String(), "\n", 2)[0])
	}
	env["kernel"] = out("uname", "-sr")
	env["java"] = out("java", "-version")
	env["git"] = out("git", "describe", "--always", "--dirty", "--tags")
	env["commit"] = out("git", "rev-parse", "HEAD")
	if h.builtCommit != "" {
		// What the binary was built from: HEAD can move during a run.
		env["git"], env["commit"] = h.builtDescribe, h.builtCommit
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, v, _ := strings.Cut(l, ":")
				env["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(h.opts.runDir, "env")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "KAFKA_VERSION="); ok {
				env["kafka"] = v
			}
		}
	}
	if h.opts.source == "tree" {
		if s := out("git", "status", "--porcelain", "--", "plugin", "cmd", "internal", "tracker", "go.mod", "go.sum"); s != "" {
			env["tree"] = "uncommitted changes in the built packages (git status): the binary is the working tree's"
		}
	}
	return env
}
