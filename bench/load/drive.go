package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// classResult is what one class's connections did inside the window.
type classResult struct {
	class class
	conns int
	// lat are the latencies of the requests answered as expected, sorted.
	lat []time.Duration
	// bytes is the size of their bodies as sent (compressed or not).
	bytes int64
	// errors counts the others by kind ("status 503", "transport: …"),
	// and example keeps one answer of each kind.
	errors  map[string]int
	example map[string]string
}

func (r classResult) errorCount() int {
	n := 0
	for _, c := range r.errors {
		n += c
	}
	return n
}

// connResult is one connection's share of its class's result.
type connResult struct {
	lat     []time.Duration
	bytes   int64
	errors  map[string]int
	example map[string]string
}

// drive keeps shares[i] connections busy with mix[i]'s flow, each sending
// its next request as soon as the last one is answered (a closed loop),
// while warm runs and then for window; it counts the requests answered
// inside the window. opened and closed run as the window opens and closes.
func drive(ctx context.Context, base string, t *target, mix []class, shares []int, warm func(), window time.Duration, opened, closed func()) ([]classResult, time.Duration, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, 0, err
	}
	total := 0
	for _, n := range shares {
		total += n
	}
	client := &fasthttp.HostClient{
		Addr:                u.Host,
		MaxConns:            total,
		MaxIdleConnDuration: time.Minute,
		ReadTimeout:         time.Minute,
		WriteTimeout:        time.Minute,
		// The bodies are read whole and dropped; no client decompresses.
		MaxResponseBodySize: 64 << 20,
	}
	defer client.CloseIdleConnections()
	const (
		warming = iota
		measuring
		stopped
	)
	var (
		phase atomic.Int32
		wg    sync.WaitGroup
	)
	conns := make([][]*connResult, len(mix))
	id := 0
	for i, c := range mix {
		conns[i] = make([]*connResult, shares[i])
		for k := range shares[i] {
			res := &connResult{errors: map[string]int{}, example: map[string]string{}}
			conns[i][k] = res
			f := c.newFlow(t, id)
			id++
			wg.Go(func() {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				for phase.Load() != stopped && ctx.Err() == nil {
					st := f.next()
					req.Reset()
					req.Header.SetMethod(st.method)
					req.SetRequestURI(base + st.path)
					// As browsers and most HTTP clients ask.
					req.Header.Set("Accept-Encoding", "gzip")
					if st.auth {
						req.Header.Set("Authorization", "Bearer "+t.token)
					}
					if st.body != nil {
						req.SetBody(st.body)
						req.Header.SetContentType("application/json")
						if st.form {
							req.Header.SetContentType("application/x-www-form-urlencoded")
						}
					}
					t0 := time.Now()
					err := client.Do(req, resp)
					d := time.Since(t0)
					status := 0
					if err == nil {
						status = resp.StatusCode()
					}
					f.done(status, func() []byte {
						b, err := resp.BodyUncompressed()
						if err != nil {
							return nil
						}
						return b
					})
					if phase.Load() != measuring {
						continue
					}
					switch {
					case err != nil:
						kind := "transport: " + transportKind(err)
						res.errors[kind]++
						res.example[kind] = err.Error()
					case status != st.want:
						kind := fmt.Sprintf("%s %d", st.method, status)
						res.errors[kind]++
						body, _ := resp.BodyUncompressed()
						res.example[kind] = fmt.Sprintf("%s %s: %.200s", st.method, st.path, bytes.TrimSpace(body))
					default:
						res.lat = append(res.lat, d)
						res.bytes += int64(len(resp.Body()))
					}
				}
			})
		}
	}
	warm()
	phase.Store(measuring)
	t0 := time.Now()
	opened()
	sleep(ctx, window)
	phase.Store(stopped)
	elapsed := time.Since(t0)
	closed()
	wg.Wait()
	if ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}

	out := make([]classResult, len(mix))
	for i, c := range mix {
		r := classResult{class: c, conns: shares[i], errors: map[string]int{}, example: map[string]string{}}
		for _, cr := range conns[i] {
			r.lat = append(r.lat, cr.lat...)
			r.bytes += cr.bytes
			for k, n := range cr.errors {
				r.errors[k] += n
				r.example[k] = cr.example[k]
			}
		}
		slices.Sort(r.lat)
		out[i] = r
	}
	return out, elapsed, nil
}

// transportKind names a transport error briefly, so errors of one kind
// count together.
func transportKind(err error) string {
	switch {
	case errors.Is(err, fasthttp.ErrTimeout):
		return "timeout"
	case errors.Is(err, fasthttp.ErrConnectionClosed):
		return "connection closed"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return "no free connection"
	}
	msg := err.Error()
	if len(msg) > 60 {
		msg = msg[:60]
	}
	return msg
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
