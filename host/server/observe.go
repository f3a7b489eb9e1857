package server

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "steward_http_requests_total", Help: "HTTP requests by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "steward_http_request_duration_seconds", Help: "HTTP request latency by route template and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

// accessLog records every request in the log and the metrics, by route
// template rather than raw path so that ids do not explode the label space.
func (s *Server) accessLog(c *fiber.Ctx) error {
	t0 := time.Now()
	err := c.Next()
	if err != nil {
		if herr := s.App.Config().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	status := c.Response().StatusCode()
	elapsed := time.Since(t0)
	route, _ := c.Locals(localRoute).(string)
	if route == "" {
		route = c.Route().Path
		if route == "/" && c.Path() != "/" {
			route = "unmatched"
		}
	}
	s.metrics.requests.WithLabelValues(route, c.Method(), strconv.Itoa(status)).Inc()
	s.metrics.duration.WithLabelValues(route, c.Method()).Observe(elapsed.Seconds())
	if cause, ok := c.Locals(localInternalError).(error); ok {
		s.deps.Logger.Error("request failed", "method", c.Method(), "path", c.Path(), "status", status, "error", cause, "request_id", requestID(c))
	}
	if s.deps.Config.AccessLog || status >= 500 {
		s.deps.Logger.Info("request", "method", c.Method(), "path", c.Path(), "route", route, "status", status,
			"duration_ms", float64(elapsed.Microseconds())/1000, "request_id", requestID(c), "remote", c.IP())
	}
	return nil
}
