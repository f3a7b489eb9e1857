package storetest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// RedisProxy forwards TCP connections to a Redis server until cut, so a
// test can take Redis away from the code under test and give it back.
type RedisProxy struct {
	// URL is the proxied server's URL with the proxy's address.
	URL    string
	target string
	mu     sync.Mutex
	down   bool
	hung   bool
	conns  []net.Conn
	held   []net.Conn
	served int
}

// NewRedisProxy starts a proxy to the server at redisURL, stopped when t
// ends.
func NewRedisProxy(t testing.TB, redisURL string) *RedisProxy {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &RedisProxy{target: u.Host}
	u.Host = ln.Addr().String()
	p.URL = u.String()
	t.Cleanup(func() {
		ln.Close()
		p.Restore()
		p.Cut()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *RedisProxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		return
	}
	if p.hung {
		p.held = append(p.held, c)
		p.mu.Unlock()
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns = append(p.conns, c, up)
	p.served++
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// Served counts the connections forwarded so far.
func (p *RedisProxy) Served() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// Cut closes every forwarded connection and refuses new ones.
func (p *RedisProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Hang closes every forwarded connection and holds new ones open without
// ever answering, as a Redis behind a broken network would.
func (p *RedisProxy) Hang() {
	p.Cut()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down, p.hung = false, true
}

// Restore forwards new connections again, closing those held by Hang.
func (p *RedisProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down, p.hung = false, false
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}
