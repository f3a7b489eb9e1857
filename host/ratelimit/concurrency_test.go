package ratelimit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

func TestConcurrencyCap(t *testing.T) {
	const limit = 5
	entered := make(chan struct{})
	release := make(chan struct{})
	app := fiber.New()
	app.Post("/sync", Concurrency(limit, nil), func(c *fiber.Ctx) error {
		entered <- struct{}{}
		<-release
		return c.SendStatus(fiber.StatusAccepted)
	})

	type outcome struct {
		status int
		err    error
	}
	// Any of the held requests may take a release, so outcomes are read
	// as they come, not per request.
	finished := make(chan outcome, limit+1)
	start := func() {
		go func() {
			resp, err := app.Test(httptest.NewRequest(http.MethodPost, "/sync", nil), -1)
			if err != nil {
				finished <- outcome{err: err}
				return
			}
			resp.Body.Close()
			finished <- outcome{status: resp.StatusCode}
		}()
	}
	waitEntered := func() {
		t.Helper()
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatal("request never reached the handler")
		}
	}

	for range limit {
		start()
		waitEntered()
	}

	resp, err := app.Test(httptest.NewRequest(http.MethodPost, "/sync", nil), 2000)
	if err != nil {
		t.Fatalf("request %d: %v (it must be refused at once, not queued)", limit+1, err)
	}
	if resp.StatusCode != fiber.StatusTooManyRequests || resp.Header.Get(fiber.HeaderRetryAfter) != "1" {
		t.Fatalf("request %d: status %d, Retry-After %q; want 429 and 1", limit+1, resp.StatusCode, resp.Header.Get(fiber.HeaderRetryAfter))
	}
	var p problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.Status != 429 || p.Title != "Too Many Requests" {
		t.Errorf("problem = %+v, %v", p, err)
	}
	resp.Body.Close()

	release <- struct{}{}
	if got := <-finished; got.err != nil || got.status != fiber.StatusAccepted {
		t.Fatalf("the released request finished with %+v, want 202", got)
	}

	// Its slot is free again.
	start()
	waitEntered()
	for range limit {
		release <- struct{}{}
	}
	for i := range limit {
		if got := <-finished; got.err != nil || got.status != fiber.StatusAccepted {
			t.Errorf("request %d finished with %+v, want 202", i, got)
		}
	}
}

func TestConcurrencyCustomBusyWriterAndPanic(t *testing.T) {
	var gotRetry time.Duration
	block := make(chan struct{})
	entered := make(chan struct{})
	app := fiber.New()
	app.Get("/", Concurrency(1, func(c *fiber.Ctx, retryAfter time.Duration) error {
		gotRetry = retryAfter
		return c.SendString("busy")
	}), func(c *fiber.Ctx) error {
		close(entered)
		<-block
		return nil
	})

	go func() { _, _ = app.Test(httptest.NewRequest(http.MethodGet, "/", nil), -1) }()
	<-entered
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil), 2000)
	close(block)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != fiber.StatusTooManyRequests || gotRetry != time.Second {
		t.Errorf("status %d, retryAfter %v; want 429 and 1s", resp.StatusCode, gotRetry)
	}

	defer func() {
		if recover() == nil {
			t.Error("Concurrency(0, nil) did not panic")
		}
	}()
	Concurrency(0, nil)
}
