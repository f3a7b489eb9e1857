package server

import (
	"io"
	"net"
	"sync/atomic"
	"time"
)

// lingerTime bounds how long a closed connection keeps reading what the
// client is still sending, as net/http's server waits before its close.
const lingerTime = 500 * time.Millisecond

// maxLingering bounds the connections lingering at once; past it, a
// connection is closed at once.
const maxLingering = 1024

// Lingering wraps a listener so that the server's close of a connection
// first ends its sending side and reads past what the client is still
// sending, for up to lingerTime, before closing. Without it a client whose
// request body the server refused unread (413 for a body over the limit)
// meets a connection reset instead of the answer: the kernel resets a
// connection closed with unread data, and the reset can discard the answer
// before the client reads it. The lingering runs on its own goroutine, so
// the server's worker is not held.
func Lingering(ln net.Listener) net.Listener {
	return &lingerListener{Listener: ln, slots: make(chan struct{}, maxLingering)}
}

type lingerListener struct {
	net.Listener
	slots chan struct{}
}

func (l *lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	return &lingerConn{TCPConn: tc, slots: l.slots}, nil
}

type lingerConn struct {
	*net.TCPConn
	slots  chan struct{}
	closed atomic.Bool
}

func (c *lingerConn) Close() error {
	if c.closed.Swap(true) {
		return net.ErrClosed
	}
	select {
	case c.slots <- struct{}{}:
	default:
		return c.TCPConn.Close()
	}
	if err := c.CloseWrite(); err != nil {
		<-c.slots
		return c.TCPConn.Close()
	}
	go func() {
		defer func() { <-c.slots }()
		_ = c.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.Copy(io.Discard, c.TCPConn)
		_ = c.TCPConn.Close()
	}()
	return nil
}
