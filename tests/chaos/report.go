package main

import (
	"bytes"
	"encoding/json"
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

// kindResult is one fault kind's figures.
type kindResult struct {
	Count        int     `json:"count"`
	Duplicates   int64   `json:"duplicates"`
	Exposure     int64   `json:"exposure"`
	MaxRecoveryS float64 `json:"max_recovery_s"`
	Unrecovered  int     `json:"unrecovered"`
	Outside      int64   `json:"outside_replay"`
	MaxAgeS      float64 `json:"max_watermark_age_s"`
	MaxPaused    int     `json:"max_paused_partitions"`
}

// faultLine is one fault of the timeline.
type faultLine struct {
	plannedFault
	GapS    float64 `json:"gap_s"`
	HoldS   float64 `json:"hold_s"`
	AtS     float64 `json:"at_s"`     // since the start of the fault phase (startup: negative)
	ActionS float64 `json:"action_s"` // how long the action took
	faultResult
	Err  string `json:"error,omitempty"`
	Note string `json:"note,omitempty"`
}

// report is chaos-report.json.
type report struct {
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures"`
	Error    string   `json:"harness_error,omitempty"`

	Seed       uint64  `json:"seed"`
	Command    string  `json:"command"`
	Protocol   string  `json:"protocol"`
	GroupType  string  `json:"group_type"`
	Cluster    int     `json:"cluster"`
	Members    int     `json:"members"`
	Partitions int     `json:"partitions"`
	DurationS  float64 `json:"duration_s"` // the fault phase
	TookS      float64 `json:"took_s"`     // the whole run

	Faults     int                    `json:"faults"`
	Records    int64                  `json:"records"` // visible records in the log (non-transactional and committed transactions)
	Received   int64                  `json:"received"`
	Deliveries int64                  `json:"deliveries"`
	Lost       int64                  `json:"lost"`
	Violations int64                  `json:"violations"`
	Backward   int                    `json:"backward"`
	Duplicates int64                  `json:"duplicates"`
	Exposure   int64                  `json:"exposure"`
	ByFault    map[string]*kindResult `json:"by_fault"`

	Aborted          int64   `json:"aborted_records"`
	AbortedReceived  int64   `json:"aborted_received"`
	Markers          int64   `json:"markers"`
	Phantom          int64   `json:"phantom"`
	Corrupt          int64   `json:"corrupt"`
	StaleReads       int64   `json:"stale_reads"`
	BackwardLog      int     `json:"backward_in_log"`
	BackwardPolled   int     `json:"backward_polled"`
	Audited          int     `json:"audited_commit_records"`
	PolledCommits    int     `json:"polled_distinct_commits"`
	RangesChecked    int64   `json:"range_offsets_checked"`
	StallsInCommits  int     `json:"stalls_in_commits"`
	MaxAgeS          float64 `json:"max_watermark_age_s"`
	MaxAgeWhere      string  `json:"max_watermark_age_where"`
	SlowestRecoveryS float64 `json:"slowest_recovery_s"`
	SlowestRecovery  string  `json:"slowest_recovery_fault"`
	KillCycles       int     `json:"kill_cycles"`
	BrokerRestarts   int     `json:"broker_restarts"`
	LeaderMoves      int     `json:"leader_moves"`
	NetworkCuts      int     `json:"network_cuts"`
	Rebalances       int     `json:"rebalances"`
	MaxPaused        int     `json:"max_paused_partitions"`
	OutOfOrderAcks   int64   `json:"out_of_order_acks"`
	SinkFailed       int64   `json:"sink_failed_requests"`
	SinkAborted      int64   `json:"sink_aborted_requests"`

	// Records Kafka took away (losscheck.go): reported_lost must equal
	// expected_lost, the offsets the harness deleted before any sink had
	// them.
	ReportedLost int64        `json:"reported_lost"`
	ExpectedLost int64        `json:"expected_lost"`
	Losses       lossResult   `json:"losses"`
	Deletions    []deletion   `json:"deletions,omitempty"`
	Truncations  []truncation `json:"truncations,omitempty"`
	LossMetrics  []string     `json:"loss_metric_mismatches,omitempty"`
	BackSteps    int          `json:"backward_steps_allowed"` // one per truncation at most
	Deleted      int64        `json:"deleted_offsets"`

	Produced  producedFigures   `json:"produced"`
	Logs      logStats          `json:"member_logs"`
	Schedule  []faultLine       `json:"schedule"`
	Violation []string          `json:"violation_examples,omitempty"`
	Backwards []string          `json:"backward_examples,omitempty"`
	LostAt    []string          `json:"lost_examples,omitempty"`
	Bad       []string          `json:"bad_examples,omitempty"`
	Env       map[string]string `json:"environment"`
}

type producedFigures struct {
	LiveAcked       int64          `json:"live_acked"`
	LiveFailed      int64          `json:"live_failed"`
	TxnCommitted    int            `json:"transactions_committed"`
	TxnAborted      int            `json:"transactions_aborted"`
	TxnFailed       int            `json:"transactions_failed"`
	TxnUnknown      int            `json:"records_of_unknown_fate"`
	ProducerErrors  map[string]int `json:"errors,omitempty"`
	TxnErrors       map[string]int `json:"transaction_errors,omitempty"`
	ProducedRecords int64          `json:"records_written"`
}

func (h *harness) buildReport(acc *accounting, runErr error) *report {
	o := h.opts
	r := &report{Seed: o.seed, Command: reproduceCommand(o), Protocol: o.protocol, Cluster: o.cluster, Members: o.members,
		Partitions: o.partitions, ByFault: map[string]*kindResult{}, Env: environment(h)}
	r.TookS = time.Since(h.began).Seconds()
	if !h.faultStart.IsZero() && !h.faultEnd.IsZero() {
		r.DurationS = h.faultEnd.Sub(h.faultStart).Seconds()
	}
	if h.poller != nil {
		r.GroupType = h.groupType()
	}
	if runErr != nil {
		r.Error = runErr.Error()
		r.Failures = append(r.Failures, "harness error: "+runErr.Error())
	}
	if h.live != nil {
		r.Produced.LiveAcked, r.Produced.LiveFailed = h.live.acked.Load(), h.live.failed.Load()
		h.live.mu.Lock()
		r.Produced.ProducerErrors = h.live.errs
		h.live.mu.Unlock()
	}
	if h.txn != nil {
		h.txn.mu.Lock()
		r.Produced.TxnCommitted, r.Produced.TxnAborted, r.Produced.TxnFailed, r.Produced.TxnUnknown = h.txn.committed, h.txn.aborted, h.txn.failed, h.txn.unknown
		r.Produced.TxnErrors = h.txn.errs
		h.txn.mu.Unlock()
	}
	if h.sink != nil {
		r.SinkFailed, r.SinkAborted = h.sink.Failed(), h.sink.Aborted()
		r.OutOfOrderAcks = h.sink.outOfOrder()
	}
	if h.fleet != nil {
		r.Logs = h.fleet.scanLogs()
	}
	var rebalances []int64
	if h.poller != nil {
		var hist [][]commitObs
		hist, _, rebalances, _ = h.poller.history()
		for _, hp := range hist {
			r.PolledCommits += len(hp)
		}
		h.poller.mu.Lock()
		for _, pz := range h.poller.paused {
			r.MaxPaused = max(r.MaxPaused, pz.paused)
		}
		h.poller.mu.Unlock()
	}
	r.Rebalances = len(rebalances)

	if acc != nil {
		r.Records, r.Received, r.Deliveries = acc.Records, acc.Received, acc.Deliveries
		r.Lost, r.Violations = acc.Lost, acc.ViolationsN
		r.BackwardLog, r.BackwardPolled = len(acc.BackwardLog), len(acc.BackwardPolled)
		r.Backward = r.BackwardLog + r.BackwardPolled
		r.Duplicates, r.Exposure = acc.Duplicates, acc.Exposure
		r.Aborted, r.AbortedReceived, r.Markers, r.Phantom, r.Corrupt = acc.Aborted, acc.AbortedReceived, acc.Markers, acc.Phantom, acc.Corrupt
		r.StaleReads, r.Audited, r.RangesChecked, r.StallsInCommits = acc.StaleReads, acc.Audited, acc.RangesChecked, acc.StallsInCommits
		r.MaxAgeS, r.MaxAgeWhere = round(acc.MaxAgeS), acc.MaxAgeWhere
		r.Violation = acc.Violations
		r.Backwards = append(slices.Clone(acc.BackwardLog), acc.BackwardPolled...)
		r.LostAt, r.Bad = acc.LostExamples, acc.BadExamples
		r.Produced.ProducedRecords = acc.Records + acc.Aborted
		r.Losses, r.LossMetrics, r.BackSteps, r.Deleted = acc.Loss, acc.LossMetrics, acc.BackSteps, acc.Deleted
		r.ReportedLost, r.ExpectedLost = acc.Loss.ReportedLost, acc.Loss.Expected
	}
	r.Deletions, r.Truncations = h.deletions, h.truncations
	var faultPhaseStart int64
	if !h.faultStart.IsZero() {
		faultPhaseStart = h.faultStart.UnixNano()
	}
	for i, f := range h.faults {
		fl := faultLine{plannedFault: f.plannedFault, GapS: f.Gap.Seconds(), HoldS: f.Hold.Seconds(), Err: f.Err, Note: f.Note,
			ActionS: round(float64(f.End-f.At) / 1e9)}
		if faultPhaseStart != 0 {
			fl.AtS = round(float64(f.At-faultPhaseStart) / 1e9)
		}
		if acc != nil && i < len(acc.Faults) {
			fl.faultResult = acc.Faults[i]
			fl.RecoveryS, fl.MaxAgeS = round(fl.RecoveryS), round(fl.MaxAgeS)
		}
		r.Schedule = append(r.Schedule, fl)
		k := r.ByFault[f.Kind]
		if k == nil {
			k = &kindResult{}
			r.ByFault[f.Kind] = k
		}
		k.Count++
		k.Duplicates += fl.Duplicates
		k.Exposure += fl.Exposure
		k.Outside += fl.Outside
		k.MaxAgeS = max(k.MaxAgeS, fl.MaxAgeS)
		k.MaxPaused = max(k.MaxPaused, fl.MaxPaused)
		if fl.RecoveryS < 0 {
			k.Unrecovered++
		} else {
			k.MaxRecoveryS = max(k.MaxRecoveryS, fl.RecoveryS)
			if f.Kind != kindStart && fl.RecoveryS > r.SlowestRecoveryS {
				r.SlowestRecoveryS, r.SlowestRecovery = fl.RecoveryS, fmt.Sprintf("#%d %s", f.Index, f.Kind)
			}
		}
		if f.Kind != kindStart {
			r.Faults++
		}
		switch f.Kind {
		case kindMemberKill:
			r.KillCycles++
		case kindKillInOutage:
			r.KillCycles++
			r.BrokerRestarts++
		case kindMemberCut:
			r.NetworkCuts++
		case kindLeaderMove:
			r.LeaderMoves++
		case kindBrokerTerm, kindBrokerKill:
			r.BrokerRestarts++
		}
		if acc != nil && fl.Duplicates > fl.Exposure {
			r.Failures = append(r.Failures, fmt.Sprintf("fault #%d (%s): %d duplicates, more than its exposure %d", f.Index, f.Kind, fl.Duplicates, fl.Exposure))
		}
	}
	if acc != nil {
		fail := func(cond bool, format string, args ...any) {
			if cond {
				r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
			}
		}
		fail(r.Lost > 0, "%d records lost (first: %v)", r.Lost, acc.LostExamples)
		fail(r.Violations > 0, "%d commit violations (first: %v)", r.Violations, first(acc.Violations, 3))
		fail(r.Backward > 0, "%d backward commits (first: %v)", r.Backward, first(r.Backwards, 3))
		fail(r.AbortedReceived > 0, "%d records of aborted transactions received at read_committed", r.AbortedReceived)
		fail(r.Phantom > 0, "%d deliveries of offsets that hold no visible record", r.Phantom)
		fail(r.Corrupt > 0, "%d records received with a value other than the log's", r.Corrupt)
		for _, m := range acc.Loss.Mismatches {
			r.Failures = append(r.Failures, "reported_lost: "+m)
		}
		for _, m := range acc.LossMetrics {
			r.Failures = append(r.Failures, "loss metrics: "+m)
		}
	}
	if h.poller != nil && acc != nil && r.GroupType != o.protocol {
		r.Failures = append(r.Failures, fmt.Sprintf("the group is a %q group, not %q: the members fell back to another protocol", r.GroupType, o.protocol))
	}
	for _, b := range r.Logs.Bad {
		r.Failures = append(r.Failures, "member log: "+b)
	}
	if h.fleet != nil {
		h.fleet.mu.Lock()
		for _, p := range h.fleet.problems {
			r.Failures = append(r.Failures, "member: "+p)
		}
		h.fleet.mu.Unlock()
	}
	r.Failures = append(r.Failures, h.notes...)
	r.Passed = len(r.Failures) == 0
	if r.Failures == nil {
		r.Failures = []string{}
	}
	r.SlowestRecoveryS = round(r.SlowestRecoveryS)
	r.DurationS, r.TookS = round(r.DurationS), round(r.TookS)
	return r
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func round(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

func summaryLine(r *report) string {
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL"
	}
	loss := ""
	if r.ReportedLost > 0 || r.ExpectedLost > 0 || len(r.Deletions) > 0 {
		loss = fmt.Sprintf(" reported_lost=%d/%d", r.ReportedLost, r.ExpectedLost)
	}
	return fmt.Sprintf("chaos: %s seed=%d protocol=%s faults=%d records=%d lost=%d violations=%d backward=%d duplicates=%d exposure=%d%s took=%.0fs",
		verdict, r.Seed, r.Protocol, r.Faults, r.Records, r.Lost, r.Violations, r.Backward, r.Duplicates, r.Exposure, loss, r.TookS)
}

func writeReport(dir string, r *report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "chaos-report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "chaos-report.md"), []byte(markdown(r)), 0o644)
}

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
	row("member logs: partitions lost / stalls / replays in place / skipped records / drain timeouts / commit failures",
		fmt.Sprintf("%d / %d / %d / %d / %d / %d", r.Logs.Lost, r.Logs.Stalled, r.Logs.Replays, r.Logs.Skipped, r.Logs.DrainTimeout, r.Logs.CommitFailed))
	row("producers: live acked / failed; transactions committed / aborted / failed",
		fmt.Sprintf("%d / %d; %d / %d / %d", r.Produced.LiveAcked, r.Produced.LiveFailed, r.Produced.TxnCommitted, r.Produced.TxnAborted, r.Produced.TxnFailed))
	row("time taken", fmt.Sprintf("%.0f s", r.TookS))

	b.WriteString("\n## Faults by kind\n\n| kind | count | duplicates | exposure | outside replay | max recovery s | unrecovered | max watermark age s | max paused |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, k := range kindOrder {
		kr := r.ByFault[k]
		if kr == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.1f | %d | %.1f | %d |\n", k, kr.Count, kr.Duplicates, kr.Exposure, kr.Outside, kr.MaxRecoveryS, kr.Unrecovered, kr.MaxAgeS, kr.MaxPaused)
	}
	b.WriteString("\nExposure: the records received above the last commit polled before the fault, less those in that commit's delivered ranges, counted up to the recovery. Outside replay: duplicates below that commit or inside its ranges (a restart from it should not have delivered them again). Unrecovered: the next fault (one drawn not to wait) began before every partition had committed again; a fault that never recovers shows in the drain.\n")

	b.WriteString("\n## Schedule (seeded) and what it did\n\n| # | kind | parameters | at s | action s | recovery s | duplicates | exposure | outside | max age s | paused | note |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range r.Schedule {
		params := ""
		switch f.Kind {
		case kindMemberKill, kindMemberStop:
			params = fmt.Sprintf("%s, down %.1fs", f.Victim, f.HoldS)
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
