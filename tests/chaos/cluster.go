package main

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The cluster: three (or n) nodes this harness formats and launches itself.

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
