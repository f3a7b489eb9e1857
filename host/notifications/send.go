package notifications

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// senders send a notice to a channel of each kind.
type senders struct {
	opts   DeliveryOptions
	dialer *net.Dialer
	tls    *tls.Config
	http   *http.Client
}

func newSenders(o DeliveryOptions) *senders {
	s := &senders{opts: o, tls: &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12}}
	s.dialer = &net.Dialer{Timeout: o.Timeout}
	if !o.AllowPrivateNetworks {
		s.dialer.Control = refusePrivate
	}
	// No proxy from the environment: the guard checks the address dialled,
	// which through a proxy would be the proxy's.
	transport := &http.Transport{
		DialContext:           s.dialer.DialContext,
		TLSClientConfig:       s.tls.Clone(), // the transport adds its protocols to its own
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
	}
	s.http = &http.Client{Transport: transport, CheckRedirect: sameHostRedirect}
	return s
}

// sameHostRedirect follows a few redirects within the webhook's host and
// none elsewhere: a receiver cannot send the signed body, or Steward's
// requests, on to a host the channel did not name.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 || req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// send delivers n to the channel: to recipient, for a contacts channel's
// delivery to an address an event named.
func (s *senders) send(ctx context.Context, ch target, recipient string, n notice) error {
	switch ch.Kind {
	case KindEmail:
		return s.email(ctx, ch, recipient, n)
	case KindSlack:
		return s.chat(ctx, ch, slackPayload(n))
	case KindTeams:
		return s.chat(ctx, ch, teamsPayload(n))
	case KindWebhook:
		return s.webhook(ctx, ch, n)
	}
	return failure{err: fmt.Errorf("unknown channel kind %q", ch.Kind), final: true}
}

// chat posts a Slack or Teams payload to the channel's incoming webhook.
// 404 and 410 mean the webhook was removed, which no retry mends.
func (s *senders) chat(ctx context.Context, ch target, payload any) error {
	body, err := jsonBody(payload)
	if err != nil {
		return err
	}
	code, err := s.post(ctx, ch, body, nil)
	if err != nil && (code == http.StatusGone || code == http.StatusNotFound) {
		return failure{err: err, final: true}
	}
	return err
}

// maxResponseSnippet bounds how much of a refusing answer's body is kept
// in the delivery's error.
const maxResponseSnippet = 200

// post POSTs a JSON body to the channel's secret URL. A 2xx answer is
// success; any other answer, a timeout or a refused address is an error
// that names the channel's host but never its URL. It returns the
// answer's status code, 0 without an answer.
func (s *senders) post(ctx context.Context, ch target, body []byte, header http.Header) (int, error) {
	u, err := url.Parse(ch.secrets.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return 0, failure{err: errors.New("the channel's URL is not an http(s) URL"), final: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, failure{err: errors.New("the channel's URL is not usable"), final: true}
	}
	req.Header = header
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Steward-Notifications/1")
	resp, err := s.http.Do(req)
	if err != nil {
		// url.Error quotes the URL, which carries the webhook's token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("POST to %s: no answer within %s", u.Host, s.opts.Timeout)
		}
		return 0, fmt.Errorf("POST to %s: %w", u.Host, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseSnippet))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	msg := fmt.Sprintf("POST to %s: answered %s", u.Host, resp.Status)
	if s := strings.TrimSpace(strings.ToValidUTF8(string(snippet), "")); s != "" {
		msg += ": " + s
	}
	return resp.StatusCode, errors.New(msg)
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598),
// private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// refusePrivate is a dialer's Control: it runs on the address about to be
// connected, after name resolution, so a name that resolves to a private
// address (DNS rebinding included) is refused as the address itself is.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || cgnat.Contains(ip) || (ip.Is4() && ip.As4()[0] == 0) {
		return fmt.Errorf("refused to connect to %s, a loopback, private or link-local address (STEWARD_NOTIFY_ALLOW_PRIVATE_NETWORKS=true allows it)", ip)
	}
	return nil
}

// scrub removes a channel's secrets from an error's text: its URL and the
// URL's path and query (which carry a webhook's token), its password and
// its signing secret.
func scrub(msg string, sec Secrets) string {
	var words []string
	if sec.URL != "" {
		words = append(words, sec.URL)
		if u, err := url.Parse(sec.URL); err == nil {
			words = append(words, u.EscapedPath(), u.Path, u.RawQuery)
		}
	}
	words = append(words, sec.Password, sec.SigningSecret)
	for _, w := range words {
		if len(w) > 1 {
			msg = strings.ReplaceAll(msg, w, "[redacted]")
		}
	}
	return msg
}

// truncate shortens s to at most n bytes of whole characters, marking the
// cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
