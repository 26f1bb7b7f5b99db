// Command chaos is the reliability harness of watermark-connect: a seeded
// schedule of faults (kill -9 and graceful restarts of group members, broker
// SIGTERM and SIGKILL restarts, a sink that acknowledges in reverse, slows
// down or fails one partition for a while; selected by --weights only,
// Kafka deleting or truncating records the group has not delivered,
// compound faults, and poison records that end in a dead-letter topic)
// against the real broker
// (resources/kafka/broker.sh) and the real binary (./cmd/watermark-connect),
// several members of one group, a live producer and a transactional producer
// that aborts some of its transactions. A checker outside the binary (the
// sink's ledger, the commits polled from the broker, every OffsetCommit
// record of __consumer_offsets and, after a final drain, the topic itself
// read back at both isolation levels) decides whether the guarantee held:
//
//   - no commit ever passes a record the sink had not received (violations);
//   - no commit goes backwards (backward);
//   - after the drain every record of a committed transaction, and every
//     non-transactional record, was received at least once (lost), and no
//     record of an aborted transaction was received at all;
//   - the duplicates after each fault stay within its exposure: the records
//     received above the last commit polled before the fault, less what that
//     commit's metadata covered;
//   - the members report lost (their ERROR lines) exactly the offsets the
//     harness deleted before any sink had them (reported_lost), and after an
//     unclean election every record of the new log is delivered and the
//     commits go back once at most, to the divergence point;
//   - with poison drawn, a record in the dead-letter topic counts as
//     delivered (from when the broker appended it) only with its provenance
//     right, every poison record ends in it, and no record the sink never
//     refused does (deadletters.go);
//   - with --ordering key (keyed records, the members on ordering: key),
//     the first deliveries of each key follow its partition's log order, no
//     request of a process holds a record while an earlier record of its
//     key is in another of its requests still unanswered, and a request
//     holds a key's records in log order (keyorder.go);
//   - with --eos, the members run Kafka to Kafka with exactly_once (a
//     processor failing now and then, zombies made by member-pause), and
//     every visible source record must have exactly one output for a
//     read_committed reader of the output topic, none of an aborted
//     transaction's (eos.go); --eos-control, the same without exactly_once,
//     must fail with duplicates.
//
// It writes chaos-report.md and chaos-report.json to $CHAOS_OUT (default
// chaos-out/ at the project root) and exits 1 when the guarantee broke, 2
// when the harness itself could not run. See docs/RELIABILITY.md.
//
//	go run ./tests/chaos --duration 3m --seed 42            # what `make chaos` runs
//	go run ./tests/chaos --duration 30m --seed 7 --fault-gap 4s
//	go run ./tests/chaos --eos --duration 2m40s --seed 42   # what `make chaos-eos` runs
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/watermark-connect/watermark-connect/internal/testkit"
)

// options are the command line.
type options struct {
	duration        time.Duration // of the fault phase
	seed            uint64
	protocol        string // classic | consumer
	cluster         int    // brokers: 1 (3 is not built yet)
	members         int
	partitions      int
	rate            int     // live producer, records/s
	txnRate         int     // transactional producer, records/s
	abortRatio      float64 // share of transactions aborted
	faultGap        time.Duration
	overlap         float64 // probability that a fault does not wait for the previous one's recovery
	weights         string
	drainTimeout    time.Duration
	recoveryTimeout time.Duration
	out             string
	binary          string
	source          string // tree | head
	race            bool
	keepBroker      bool
	runDir          string
	port            int
	brokerScript    string
	verbose         bool
	selfCheck       bool
	ordering        string // the members' ordering: none | key
	keys            int    // keys of the keyed producers (keys.go)
	keyCheck        bool   // the per-key check under --ordering none: a negative control
	// eos: the exactly-once mode (eos.go): members run Kafka to Kafka with
	// exactly_once, and the checker counts each source record's outputs.
	eos bool
	// errorOneIn: under --eos, one message in errorOneIn fails in a
	// processor (reject_errored nacks it, which aborts the transaction).
	errorOneIn int
	// eosControl: the --eos pipeline without exactly_once (at least once
	// into Kafka), a negative control that must FAIL with duplicates.
	eosControl bool
}

// checksKeys reports whether the run keys its records and checks key order
// (keyorder.go): under --ordering key, or with --key-check.
func (o *options) checksKeys() bool { return o.ordering == "key" || o.keyCheck }

func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", 3*time.Minute, "how long faults are injected (the drain and the checks come after)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the fault schedule (0: one from the clock, printed)")
	fs.StringVar(&o.protocol, "protocol", "classic", "group protocol of the members: classic or consumer")
	fs.IntVar(&o.cluster, "cluster", 1, "brokers: 1 (resources/kafka/broker.sh) or 3 (nodes this harness launches: replication factor 3, min.insync.replicas 2, a proxy per member for network cuts)")
	fs.IntVar(&o.members, "members", 3, "members of the consumer group")
	fs.IntVar(&o.partitions, "partitions", 12, "partitions of the topic")
	fs.IntVar(&o.rate, "rate", 300, "records per second of the live producer")
	fs.IntVar(&o.txnRate, "txn-rate", 100, "records per second of the transactional producer")
	fs.Float64Var(&o.abortRatio, "abort-ratio", 0.25, "share of the transactions that are aborted")
	fs.DurationVar(&o.faultGap, "fault-gap", 8*time.Second, "mean pause between one fault's recovery and the next fault")
	fs.Float64Var(&o.overlap, "overlap", 0.2, "probability that a fault starts without waiting for the previous one to recover")
	fs.StringVar(&o.weights, "weights", "", "relative weights of the fault kinds, kind=weight,... (default "+defaultWeights+"; with --cluster 3 also "+clusterExtraWeights+
		"; in no default, selected here only: retention, unclean-election (--cluster 3), replay-rebalance, kill-in-outage, poison (not with the first three); with --eos only: member-pause)")
	fs.DurationVar(&o.drainTimeout, "drain-timeout", 5*time.Minute, "how long the final drain may take")
	fs.DurationVar(&o.recoveryTimeout, "recovery-timeout", 3*time.Minute, "how long to wait for a fault's recovery before the next fault")
	fs.StringVar(&o.out, "out", "", "report folder (default $CHAOS_OUT, else chaos-out/ at the project root)")
	fs.StringVar(&o.binary, "binary", "", "a prebuilt watermark-connect (default: built once from --source)")
	fs.StringVar(&o.source, "source", "tree", "what to build: tree (the working tree) or head (git HEAD, through git archive)")
	fs.BoolVar(&o.race, "race", false, "build the binary with -race (a DATA RACE in its log fails the run)")
	fs.BoolVar(&o.keepBroker, "keep-broker", false, "leave the broker running at the end")
	fs.StringVar(&o.runDir, "run-dir", "", "KAFKA_RUN_DIR of the harness's own broker; --cluster 3 puts its nodes in <run-dir>-cluster (default: wm-chaos-<hash> in $TMPDIR or /tmp, <hash> naming this checkout, so that two checkouts never share one)")
	fs.IntVar(&o.port, "port", 29692, "the broker's client port; the controller and SASL_SSL ports are the next two; with --cluster 3 the nodes take the 30 ports from port+10 (keep them below 32768)")
	fs.StringVar(&o.brokerScript, "broker-script", "", "broker.sh (default resources/kafka/broker.sh)")
	fs.BoolVar(&o.verbose, "v", false, "log every poll error")
	fs.BoolVar(&o.selfCheck, "self-check", false, "a negative control: the sink acknowledges one batch without recording it, so the run must FAIL with lost records and commit violations")
	fs.StringVar(&o.ordering, "ordering", "none", "the members' ordering: none or key; key also keys the producers' records (--keys) and checks key order at the sink")
	fs.IntVar(&o.keys, "keys", 32, "with --ordering key (or --key-check): how many keys the producers draw from (k000, k001, ...); the empty key and a null key are drawn as often as each of them")
	fs.BoolVar(&o.keyCheck, "key-check", false, "a negative control: keyed records and the key-order check with members on --ordering none, so the run must FAIL with key-order violations")
	fs.BoolVar(&o.eos, "eos", false, "exactly once: every member runs kafka_watermark (exactly_once: true) -> split, a 0-5 ms sleep, a flaky processor -> kafka_watermark output bound to the group, into an output topic; the checker requires exactly one output per source record for a read_committed reader (default weights "+eosWeights+")")
	fs.BoolVar(&o.eosControl, "eos-control", false, "a negative control of --eos: the same pipeline and checks with exactly_once left out of the members' config (at least once into Kafka), so the run must FAIL with duplicates")
	fs.IntVar(&o.errorOneIn, "error-one-in", 2000, "with --eos: one message in N fails in a processor (reject_errored nacks its batch: the open transaction aborts); 0: none")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.protocol != "classic" && o.protocol != "consumer":
		return nil, fmt.Errorf("--protocol must be classic or consumer, not %q", o.protocol)
	case o.cluster != 1 && o.cluster != 3:
		return nil, fmt.Errorf("--cluster %d: the shapes are 1 (broker.sh) and 3", o.cluster)
	case o.cluster > 1 && o.members > maxCutMembers:
		return nil, fmt.Errorf("--cluster %d takes at most %d members", o.cluster, maxCutMembers)
	case o.members < 1 || o.partitions < o.members:
		return nil, fmt.Errorf("--members %d and --partitions %d: need at least one member and a partition each", o.members, o.partitions)
	case o.source != "tree" && o.source != "head":
		return nil, fmt.Errorf("--source must be tree or head, not %q", o.source)
	case o.port < 1024 || o.port+nodeStride*(o.cluster+1) >= 32768:
		return nil, fmt.Errorf("--port %d: keep the broker's three ports between 1024 and 32767, below the ephemeral range", o.port)
	case o.rate < 1 || o.txnRate < 0 || o.abortRatio < 0 || o.abortRatio > 1:
		return nil, errors.New("--rate must be positive, --txn-rate not negative, --abort-ratio between 0 and 1")
	case o.ordering != "none" && o.ordering != "key":
		return nil, fmt.Errorf("--ordering must be none or key, not %q", o.ordering)
	case o.keys < 1 || o.keys > 1000:
		return nil, fmt.Errorf("--keys %d: between 1 and 1000", o.keys)
	case o.keyCheck && o.ordering == "key":
		return nil, errors.New("--key-check is the negative control of --ordering none; --ordering key checks key order already")
	case o.errorOneIn < 0:
		return nil, fmt.Errorf("--error-one-in %d: 0 (no processor errors) or more", o.errorOneIn)
	}
	if err := o.checkEOS(); err != nil {
		return nil, err
	}
	if o.weights == "" {
		o.weights = defaultWeights
		if o.cluster > 1 {
			o.weights += "," + clusterExtraWeights
		}
		if o.eos {
			o.weights = eosWeights
		}
	}
	weights, err := parseWeights(o.weights)
	if err != nil {
		return nil, err
	}
	for _, w := range weights {
		if w.w > 0 && o.eos && !slices.Contains(eosKinds, w.kind) {
			return nil, fmt.Errorf("--weights: %s is not a fault of --eos runs (they take %s)", w.kind, strings.Join(eosKinds, ", "))
		}
		if w.w > 0 && !o.eos && w.kind == kindMemberPause {
			return nil, fmt.Errorf("--weights: %s needs --eos (the at-least-once checks do not account for a zombie's deliveries yet)", w.kind)
		}
		if o.cluster == 1 && w.w > 0 && slices.Contains(clusterKinds, w.kind) {
			return nil, fmt.Errorf("--weights: %s needs --cluster 3", w.kind)
		}
		if w.w > 0 && slices.Contains(notWithPoison, w.kind) && drawsPoison(weights) {
			return nil, fmt.Errorf("--weights: %s and %s in one run: dead_letter would end the stall %s needs", kindPoison, w.kind, w.kind)
		}
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano()%1_000_000_000) + 1
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	root, err := testkit.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if o.out == "" {
		o.out = os.Getenv("CHAOS_OUT")
	}
	if o.out == "" {
		o.out = filepath.Join(root, "chaos-out")
	}
	if o.runDir == "" {
		o.runDir = defaultRunDir(root)
	} else if abs, err := filepath.Abs(o.runDir); err == nil {
		o.runDir = abs // broker.sh takes absolute run dirs only
	}
	if o.brokerScript == "" {
		o.brokerScript = filepath.Join(root, "resources", "kafka", "broker.sh")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A watchdog: a run that hangs somewhere ends, reports and cleans up.
	ctx, cancel := context.WithTimeout(ctx, o.duration+o.drainTimeout+o.recoveryTimeout+20*time.Minute)
	code := run(ctx, o, root)
	cancel()
	stop()
	os.Exit(code)
}

// drawsPoison reports whether the weights can draw the poison fault: only
// then do the members run with a dead-letter topic.
func drawsPoison(weights []weight) bool {
	for _, w := range weights {
		if w.kind == kindPoison && w.w > 0 {
			return true
		}
	}
	return false
}

// reproduceCommand is the command line that runs o again: the seed, the
// duration, and every option that differs from its default.
func reproduceCommand(o *options) string {
	args := []string{"go run ./tests/chaos", "--duration", o.duration.String(), "--seed", fmt.Sprint(o.seed)}
	if o.protocol != "classic" {
		args = append(args, "--protocol", o.protocol)
	}
	def, _ := parseOptions(nil)
	add := func(name string, v, d any) {
		if fmt.Sprint(v) != fmt.Sprint(d) {
			args = append(args, "--"+name, fmt.Sprint(v))
		}
	}
	add("cluster", o.cluster, def.cluster)
	add("members", o.members, def.members)
	add("partitions", o.partitions, def.partitions)
	add("rate", o.rate, def.rate)
	add("txn-rate", o.txnRate, def.txnRate)
	add("abort-ratio", o.abortRatio, def.abortRatio)
	add("fault-gap", o.faultGap, def.faultGap)
	add("overlap", o.overlap, def.overlap)
	if o.eos {
		args = append(args, "--eos")
		add("weights", o.weights, eosWeights)
		add("error-one-in", o.errorOneIn, def.errorOneIn)
		if o.eosControl {
			args = append(args, "--eos-control")
		}
	} else if want := defaultWeights; o.cluster > 1 {
		want += "," + clusterExtraWeights
		add("weights", o.weights, want)
	} else {
		add("weights", o.weights, want)
	}
	add("source", o.source, def.source)
	add("ordering", o.ordering, def.ordering)
	if o.checksKeys() {
		add("keys", o.keys, def.keys)
	}
	if o.keyCheck {
		args = append(args, "--key-check")
	}
	if o.selfCheck {
		args = append(args, "--self-check")
	}
	if o.race {
		args = append(args, "--race")
	}
	return strings.Join(args, " ")
}
