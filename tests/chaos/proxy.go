package main

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// proxy forwards one loopback port to a broker listener. Cut, it becomes a
// black hole, as a network partition is: established connections stay open
// but nothing crosses them any more (the client's requests time out, the
// broker misses its heartbeats), new connections are accepted and left
// silent. When the cut ends every connection of the cut is closed (what
// was dropped broke the protocol stream) and new ones forward again.
type proxy struct {
	ln     net.Listener
	target string

	cut    atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]bool // every open connection, client and broker sides
	closed bool
}

func newProxy(listen, target string) (*proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	return p, nil
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !p.track(c) {
			continue
		}
		if p.cut.Load() {
			continue // silent until the cut ends and closes it
		}
		go p.forward(c)
	}
}

func (p *proxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.untrack(client)
		return
	}
	if !p.track(server) {
		p.untrack(client)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32*1024)
		for {
			n, err := src.Read(buf)
			if n > 0 && !p.cut.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Either side closed or the cut ended: close both.
		p.untrack(dst)
		p.untrack(src)
	}
	go pipe(server, client)
	go pipe(client, server)
	wg.Wait()
}

// setCut starts or ends a cut.
func (p *proxy) setCut(on bool) {
	if on {
		p.cut.Store(true)
		return
	}
	p.mu.Lock()
	var all []net.Conn
	for c := range p.conns {
		all = append(all, c)
	}
	p.conns = map[net.Conn]bool{}
	p.cut.Store(false)
	p.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	all := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	_ = p.ln.Close()
	for c := range all {
		_ = c.Close()
	}
}
