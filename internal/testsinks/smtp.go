// Package testsinks are the receiving ends of notification channels for
// tests: an SMTP server that requires STARTTLS (or implicit TLS) and
// authentication and keeps every message, and a webhook receiver that
// keeps every request and can be taken down and brought back.
package testsinks

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/mail"
	"strconv"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/stewardhq/steward/internal/testcert"
)

// SMTP credentials the sink accepts.
const (
	SMTPUser     = "steward"
	SMTPPassword = "sink-password-6f1d"
)

// SMTPOptions shape the sink.
type SMTPOptions struct {
	// ImplicitTLS serves TLS from the first byte (port 465's way) instead
	// of plain text with a required STARTTLS.
	ImplicitTLS bool
}

// SMTP is a running SMTP sink on 127.0.0.1 with a self-signed
// certificate for 127.0.0.1 and localhost.
type SMTP struct {
	Host string
	Port int
	// CAFile is the certificate in PEM, for a host started as a process
	// (STEWARD_NOTIFY_CA_FILE); Pool trusts it in process.
	CAFile string
	Pool   *x509.CertPool
	Cert   *x509.Certificate

	mu   sync.Mutex
	msgs []Message
}

// Message is a message the sink accepted.
type Message struct {
	From string
	To   []string
	// User is who authenticated; TLS is whether the session was encrypted.
	User   string
	TLS    bool
	Raw    []byte
	Header mail.Header
}

// NewSMTP starts a sink, stopped when t ends.
func NewSMTP(t testing.TB, o SMTPOptions) *SMTP {
	t.Helper()
	pair := testcert.Write(t, t.TempDir(), "smtp-sink")
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	var ln net.Listener
	if o.ImplicitTLS {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", tlsConf)
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTP{CAFile: pair.CertFile, Pool: pair.Pool, Cert: pair.Cert}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	s.Host = host
	s.Port, _ = strconv.Atoi(port)
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, encrypted := c.TLSConnectionState()
		return &session{sink: s, tls: encrypted, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.TLSConfig = tlsConf
	srv.AllowInsecureAuth = false
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Addr is host:port.
func (s *SMTP) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Messages are the messages accepted so far.
func (s *SMTP) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// session refuses mail before authentication, and authentication before
// TLS (the server's AllowInsecureAuth is off).
type session struct {
	sink *SMTP
	conn *smtp.Conn
	tls  bool
	user string
	from string
	to   []string
}

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != SMTPUser || password != SMTPPassword {
			return errors.New("invalid username or password")
		}
		ss.user = username
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	parsed, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	_, encrypted := ss.conn.TLSConnectionState()
	m := Message{From: ss.from, To: ss.to, User: ss.user, TLS: ss.tls || encrypted, Raw: raw, Header: parsed.Header}
	ss.sink.mu.Lock()
	ss.sink.msgs = append(ss.sink.msgs, m)
	ss.sink.mu.Unlock()
	return nil
}

func (ss *session) Reset() { ss.from, ss.to = "", nil }

func (ss *session) Logout() error { return nil }
