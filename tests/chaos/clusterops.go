package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A running cluster: readiness, outages, restarts of one node, the stop,
// its logs, and the network cuts between members and nodes.

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

// copyFile copies the file src to dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
