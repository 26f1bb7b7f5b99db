package main

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaShape is the Kafka a run uses: the single broker of broker.sh, or
// the 3-node cluster this harness launches itself.
type kafkaShape interface {
	start(ctx context.Context) error
	stop(ctx context.Context) error
	seeds() string                 // comma-separated PLAINTEXT addresses, for the harness's clients
	memberSeeds(member int) string // what member i (0-based) connects to
	size() int
	replication() int
	// restart stops node (0-based) with SIGTERM, or SIGKILL when kill,
	// waits pause and starts it again on its data.
	restart(ctx context.Context, node int, kill bool, pause time.Duration) error
	// ready waits until it serves (a cluster: every partition fully in
	// sync, so that the next restart is one broker at a time).
	ready(ctx context.Context) error
	outages() []window
	keepLogs(dir string)
	nodeAddr(i int) string // node i's (0-based) client address, for the harness
}

// ---------------------------------------------------------------------------
// The single broker (broker.sh).

func (b *broker) seeds() string               { return b.addr() }
func (b *broker) memberSeeds(int) string      { return b.addr() }
func (b *broker) size() int                   { return 1 }
func (b *broker) replication() int            { return 1 }
func (b *broker) ready(context.Context) error { return nil }
func (b *broker) nodeAddr(int) string         { return b.addr() }

func (b *broker) restart(ctx context.Context, _ int, kill bool, pause time.Duration) error {
	if kill {
		return b.restartKill(ctx, pause)
	}
	return b.restartTerm(ctx, pause)
}

func (b *broker) keepLogs(dir string) {
	if err := b.keepLog(filepath.Join(dir, "broker-server.log")); err != nil {
		b.logf("keep the broker log: %v", err)
	}
}

// ---------------------------------------------------------------------------
// The cluster.

//go:embed cluster.properties.template
var clusterTemplate string

// nodeStride is how many ports one node takes: client, controller, one
// listener per member and one proxy per member (members <= maxCutMembers).
const (
	nodeStride    = 10
	maxCutMembers = 4
)

// node is one broker + controller process of the cluster.
type node struct {
	id    int // node.id, 1-based
	dir   string
	port  int
	props string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

func (n *node) addr() string     { return fmt.Sprintf("127.0.0.1:%d", n.port) }
func (n *node) ctrlPort() int    { return n.port + 1 }
func (n *node) listen(m int) int { return n.port + 2 + m }
func (n *node) proxyPort(m int) int {
	return n.port + 2 + maxCutMembers + m
}

func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// cluster is three (or n) combined nodes with static voters, replication
// factor 3 and min.insync.replicas 2, on loopback, and a proxy per member
// and node through which that member reaches the node.
type cluster struct {
	o       *options
	root    string
	dir     string
	libs    string
	members int
	nodes   []*node
	proxies [][]*proxy // [member][node]
	logf    func(string, ...any)
	note    func(string, ...any)

	// noELR formats the cluster with eligible leader replicas (KIP-966)
	// off, which Kafka 4.x turns on by default and which keeps an unclean
	// election from happening: for the unclean-election fault only.
	noELR bool

	mu      sync.Mutex
	windows []window
}

func newCluster(o *options, root string, logf, note func(string, ...any)) *cluster {
	c := &cluster{o: o, root: root, dir: o.runDir + "-cluster", members: o.members, logf: logf, note: note}
	if ws, err := parseWeights(o.weights); err == nil {
		for _, w := range ws {
			if w.kind == kindUnclean && w.w > 0 {
				c.noELR = true
			}
		}
	}
	for i := range o.cluster {
		id := i + 1
		d := filepath.Join(c.dir, fmt.Sprintf("node%d", id))
		c.nodes = append(c.nodes, &node{id: id, dir: d, port: o.port + nodeStride*(i+1), props: filepath.Join(d, "server.properties")})
	}
	return c
}

func (c *cluster) seeds() string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.addr())
	}
	return strings.Join(s, ",")
}

func (c *cluster) memberSeeds(m int) string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, fmt.Sprintf("127.0.0.1:%d", n.proxyPort(m)))
	}
	return strings.Join(s, ",")
}

func (c *cluster) size() int             { return len(c.nodes) }
func (c *cluster) nodeAddr(i int) string { return c.nodes[i].addr() }
func (c *cluster) replication() int      { return min(3, len(c.nodes)) }

// libsDir is broker.sh's jar cache; a missing one is filled by a start and
// stop of broker.sh's own broker.
func (c *cluster) libsDir(ctx context.Context) (string, error) {
	version := os.Getenv("KAFKA_VERSION")
	if version == "" {
		version = "4.3.1"
	}
	home := os.Getenv("KAFKA_HOME_DIR")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		home = filepath.Join(h, ".cache", "watermark-connect", "kafka-"+version)
	}
	libs := filepath.Join(home, "libs")
	if _, err := os.Stat(filepath.Join(libs, ".complete")); err == nil {
		return libs, nil
	}
	c.logf("no Kafka jars in %s yet: broker.sh start fetches them", libs)
	b := newBroker(c.o, c.logf)
	if err := b.start(ctx); err != nil {
		return "", err
	}
	if err := b.stop(ctx); err != nil {
		return "", err
	}
	return libs, nil
}

const clusterMarker = ".watermark-connect-chaos-cluster"

func (c *cluster) start(ctx context.Context) error {
	if c.members > maxCutMembers {
		return fmt.Errorf("--cluster %d takes at most %d members (a listener and a proxy each per node)", len(c.nodes), maxCutMembers)
	}
	libs, err := c.libsDir(ctx)
	if err != nil {
		return err
	}
	c.libs = libs
	if _, err := os.Stat(c.dir); err == nil {
		if _, err := os.Stat(filepath.Join(c.dir, clusterMarker)); err != nil {
			return fmt.Errorf("%s exists and was not made by this harness: refusing to wipe it", c.dir)
		}
		c.killLeftovers()
		if err := os.RemoveAll(c.dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, clusterMarker), nil, 0o644); err != nil {
		return err
	}
	for _, n := range c.nodes {
		for _, p := range []int{n.port, n.ctrlPort()} {
			if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second); err == nil {
				_ = conn.Close()
				return fmt.Errorf("port %d is in use: pick others with --port", p)
			}
		}
	}
	var voters []string
	for _, n := range c.nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.ctrlPort()))
	}
	// A base64url id may start with '-', which the storage tool's argument
	// parser takes for an option ("--cluster-id: expected one argument").
	clusterID := "-"
	for strings.HasPrefix(clusterID, "-") {
		idb := make([]byte, 16)
		if _, err := rand.Read(idb); err != nil {
			return err
		}
		clusterID = base64.RawURLEncoding.EncodeToString(idb)
	}
	for _, n := range c.nodes {
		for _, d := range []string{"logs", "tmp"} {
			if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(n.props, []byte(c.properties(n, strings.Join(voters, ","))), 0o644); err != nil {
			return err
		}
		args := append(jvmFlags(filepath.Join(n.dir, "tmp")), "-cp", filepath.Join(c.libs, "*"), "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", n.props)
		if c.noELR {
			// kafka-storage version-mapping lists it at 1 for 4.3-IV0; 0
			// has no dependencies (kafka-storage feature-dependencies).
			args = append(args, "--feature", "eligible.leader.replicas.version=0")
		}
		fc := exec.CommandContext(ctx, c.java(), args...)
		if out, err := fc.CombinedOutput(); err != nil {
			return fmt.Errorf("format node %d: %w\n%s", n.id, err, out)
		}
	}
	c.proxies = make([][]*proxy, c.members)
	for m := range c.members {
		for _, n := range c.nodes {
			p, err := newProxy(fmt.Sprintf("127.0.0.1:%d", n.proxyPort(m)), fmt.Sprintf("127.0.0.1:%d", n.listen(m)))
			if err != nil {
				return fmt.Errorf("proxy of member %d to node %d: %w", m+1, n.id, err)
			}
			c.proxies[m] = append(c.proxies[m], p)
		}
	}
	began := time.Now()
	for _, n := range c.nodes {
		if err := c.launch(n); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		if err := c.waitServing(ctx, n, 4*time.Minute); err != nil {
			return err
		}
	}
	if err := c.waitBrokers(ctx, 2*time.Minute); err != nil {
		return err
	}
	c.logf("cluster of %d nodes up in %v: %s", len(c.nodes), time.Since(began).Round(time.Millisecond), c.seeds())
	if c.noELR {
		c.logf("formatted with eligible.leader.replicas.version=0 (KIP-966 off) for the unclean-election fault")
	}
	return nil
}

func (c *cluster) java() string {
	if j := os.Getenv("JAVA_HOME"); j != "" {
		return filepath.Join(j, "bin", "java")
	}
	return "java"
}

func (c *cluster) properties(n *node, voters string) string {
	listeners := []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.port), fmt.Sprintf("CONTROLLER://127.0.0.1:%d", n.ctrlPort())}
	advertised := []string{fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.port)}
	protocols := []string{"PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"}
	for m := range c.members {
		name := fmt.Sprintf("M%d", m+1)
		listeners = append(listeners, fmt.Sprintf("%s://127.0.0.1:%d", name, n.listen(m)))
		advertised = append(advertised, fmt.Sprintf("%s://127.0.0.1:%d", name, n.proxyPort(m)))
		protocols = append(protocols, name+":PLAINTEXT")
	}
	return strings.NewReplacer(
		"@NODE_ID@", strconv.Itoa(n.id),
		"@VOTERS@", voters,
		"@LISTENERS@", strings.Join(listeners, ","),
		"@ADVERTISED@", strings.Join(advertised, ","),
		"@PROTOCOL_MAP@", strings.Join(protocols, ","),
		"@DATA_DIR@", filepath.Join(n.dir, "data"),
	).Replace(clusterTemplate)
}

// launch starts node n's JVM; its log goes to <node>/logs/server.log, its
// temporary files to <node>/tmp (jvmFlags).
func (c *cluster) launch(n *node) error {
	heap := os.Getenv("KAFKA_HEAP_OPTS")
	if heap == "" {
		heap = "-Xms512m -Xmx512m"
	}
	tmp := filepath.Join(n.dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	args := append(strings.Fields(heap), jvmFlags(tmp)...)
	args = append(args, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile="+filepath.Join(c.root, "resources", "kafka", "log4j2.yaml"),
		"-Dkafka.logs.dir="+filepath.Join(n.dir, "logs"),
		"-cp", filepath.Join(c.libs, "*"), "kafka.Kafka", n.props)
	out, err := os.OpenFile(filepath.Join(n.dir, "logs", "broker.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.java(), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("start node %d: %w", n.id, err)
	}
	done := make(chan struct{})
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	_ = os.WriteFile(filepath.Join(n.dir, "broker.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	go func() {
		err := cmd.Wait()
		_ = out.Close()
		n.mu.Lock()
		n.waitErr = err
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

// waitServing waits until node n's client port answers a metadata request
// (in Kafka 4 the port opens once the broker is unfenced).
func (c *cluster) waitServing(ctx context.Context, n *node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if !n.running() {
			return fmt.Errorf("node %d exited during its start (%w); see %s", n.id, n.waitErr, filepath.Join(n.dir, "logs"))
		}
		if conn, err := net.DialTimeout("tcp", n.addr(), time.Second); err == nil {
			_ = conn.Close()
			if c.metadataFrom(ctx, n) == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d does not serve after %v", n.id, timeout)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

func (c *cluster) metadataFrom(ctx context.Context, n *node) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(mctx)
	return err
}

// waitBrokers waits until the metadata lists every node.
func (c *cluster) waitBrokers(ctx context.Context, timeout time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(c.seeds())...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(timeout)
	for {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := adm.BrokerMetadata(mctx)
		cancel()
		if err == nil && len(m.Brokers) == len(c.nodes) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the metadata does not list all %d nodes after %v (last error: %s)", len(c.nodes), timeout, errString(err))
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// ready waits until every node serves and every partition of every topic
// has its full replica set in sync.
func (c *cluster) ready(ctx context.Context) error {
	if err := c.waitBrokers(ctx, 3*time.Minute); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(c.seeds())...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		td, err := adm.ListTopicsWithInternal(mctx)
		cancel()
		lagging := 0
		if err == nil {
			td.EachPartition(func(p kadm.PartitionDetail) {
				if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
					lagging++
				}
			})
		}
		if err == nil && lagging == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster is not in sync after 3m: %d partitions under-replicated or leaderless (last error: %s)", lagging, errString(err))
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

func (c *cluster) addWindow(w window) {
	c.mu.Lock()
	c.windows = append(c.windows, w)
	c.mu.Unlock()
}

func (c *cluster) outages() []window {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.windows)
}

// terminate stops node n: SIGTERM (SIGKILL after two minutes, which is a
// problem) or SIGKILL.
func (c *cluster) terminate(n *node, kill bool) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil || !n.running() {
		return
	}
	if kill {
		_ = cmd.Process.Kill()
		<-done
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		c.note("node %d ignored SIGTERM for 2m: SIGKILL", n.id)
		_ = cmd.Process.Kill()
		<-done
	}
}

func (c *cluster) restart(ctx context.Context, i int, kill bool, pause time.Duration) error {
	n := c.nodes[i]
	w := window{from: time.Now().UnixNano()}
	c.terminate(n, kill)
	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	c.logf("node %d stopped (%s)", n.id, how)
	if err := sleepCtx(ctx, pause); err != nil {
		return err
	}
	if err := c.launch(n); err != nil {
		return err
	}
	err := c.waitServing(ctx, n, 4*time.Minute)
	w.to = time.Now().UnixNano()
	c.addWindow(w)
	if err == nil {
		c.logf("node %d serving again after %v", n.id, time.Duration(w.to-w.from).Round(time.Millisecond))
	}
	return err
}

func (c *cluster) stop(context.Context) error {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func(n *node) {
			defer wg.Done()
			c.terminate(n, false)
		}(n)
	}
	wg.Wait()
	for _, ps := range c.proxies {
		for _, p := range ps {
			p.close()
		}
	}
	return nil
}

// killLeftovers SIGKILLs nodes a previous run left running in the run dir
// (pid files checked against the command line).
func (c *cluster) killLeftovers() {
	for _, n := range c.nodes {
		raw, err := os.ReadFile(filepath.Join(n.dir, "broker.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), "kafka.Kafka "+n.props) {
			continue
		}
		c.logf("killing node %d (pid %d) left running by an earlier run", n.id, pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for processAlive(pid) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (c *cluster) keepLogs(dir string) {
	for _, n := range c.nodes {
		if err := copyFile(filepath.Join(n.dir, "logs", "server.log"), filepath.Join(dir, fmt.Sprintf("node%d-server.log", n.id))); err != nil {
			c.logf("keep the log of node %d: %v", n.id, err)
		}
	}
}

// cut starts or ends a network cut between member m and every node.
func (c *cluster) cut(m int, on bool) {
	for _, p := range c.proxies[m] {
		p.setCut(on)
	}
}

// moveLeaders moves the leadership of partitions to another replica: it
// reorders their replicas (the same set, so no data moves) with a new
// preferred leader first, then runs a preferred leader election. With
// coordinator, the partition is the group's __consumer_offsets partition,
// so the group coordinator moves; otherwise three partitions of topic.
func (c *cluster) moveLeaders(ctx context.Context, topic, group string, coordinator bool, first int32, topicParts int) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedList(c.seeds())...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var targets []kadm.PartitionDetail
	if coordinator {
		td, err := adm.ListTopicsWithInternal(mctx, "__consumer_offsets")
		if err != nil {
			return "", err
		}
		d := td["__consumer_offsets"]
		if len(d.Partitions) == 0 {
			return "", errors.New("no __consumer_offsets partitions")
		}
		p := int32(javaStringHash(group)&0x7fffffff) % int32(len(d.Partitions))
		targets = append(targets, d.Partitions[p])
	} else {
		td, err := adm.ListTopics(mctx, topic)
		if err != nil {
			return "", err
		}
		for k := range int32(3) {
			if p, ok := td[topic].Partitions[(first+k*int32(max(1, topicParts/3)))%int32(topicParts)]; ok {
				targets = append(targets, p)
			}
		}
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	set := kadm.TopicsSet{}
	var moves []string
	for _, p := range targets {
		i := slices.Index(p.Replicas, p.Leader)
		if i < 0 || len(p.Replicas) < 2 {
			continue
		}
		next := p.Replicas[(i+1)%len(p.Replicas)]
		order := []int32{next}
		for _, r := range p.Replicas {
			if r != next {
				order = append(order, r)
			}
		}
		req.Assign(p.Topic, p.Partition, order)
		set.Add(p.Topic, p.Partition)
		moves = append(moves, fmt.Sprintf("%s/%d: %d->%d", p.Topic, p.Partition, p.Leader, next))
	}
	if len(moves) == 0 {
		return "", errors.New("no partition to move")
	}
	resp, err := adm.AlterPartitionAssignments(mctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return "", fmt.Errorf("reorder replicas: %w", err)
	}
	// The same replica set: the reassignment completes at once; the
	// election may still race it, so retry a little.
	var lastErr error
	for range 20 {
		res, err := adm.ElectLeaders(mctx, kadm.ElectPreferredReplica, set)
		if err == nil {
			lastErr = nil
			for _, ps := range res {
				for _, r := range ps {
					if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) && lastErr == nil {
						lastErr = r.Err
					}
				}
			}
			if lastErr == nil {
				break
			}
		} else {
			lastErr = err
		}
		if err := sleepCtx(mctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
	if lastErr != nil {
		return strings.Join(moves, ", "), fmt.Errorf("preferred leader election: %w", lastErr)
	}
	return strings.Join(moves, ", "), nil
}

// javaStringHash is Java's String.hashCode, which Kafka uses to place a
// group on a __consumer_offsets partition.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s { // group names here are ASCII: one UTF-16 unit per rune
		h = 31*h + int32(r)
	}
	return h
}

func seedList(s string) []string { return strings.Split(s, ",") }

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// errString is err's text, or "none".
func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
