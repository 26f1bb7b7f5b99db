package testkit

import (
	"net"
	"sync"
)

// Silent is a TCP listener on loopback that accepts every connection and
// never writes to any: a broker address that answers nothing, as a wrong
// port whose service waits for the client to speak first does, or a proxy
// whose backend is down. Safe for concurrent use.
type Silent struct {
	l net.Listener

	mu    sync.Mutex
	conns []net.Conn // accepted, held open until Close
}

// NewSilent listens on a free loopback port and accepts until Close.
func NewSilent() (*Silent, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Silent{l: l}
	go s.accept()
	return s, nil
}

func (s *Silent) accept() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
	}
}

// Addr is the listener's host:port.
func (s *Silent) Addr() string { return s.l.Addr().String() }

// Accepted is how many connections it accepted so far.
func (s *Silent) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close stops listening and closes every connection it accepted.
func (s *Silent) Close() {
	s.l.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}
