package notifications

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/mail"
	"net/url"
	"strings"

	gomail "github.com/wneessen/go-mail"
)

// TLS modes of an e-mail channel.
const (
	TLSStartTLS = "starttls"
	TLSImplicit = "tls"
	TLSNone     = "none"
)

// smtpPorts are the default ports of each TLS mode.
var smtpPorts = map[string]int{TLSStartTLS: 587, TLSImplicit: 465, TLSNone: 25}

// email sends the notice over SMTP: to the channel's addresses, or to
// recipient for a contacts channel's delivery. STARTTLS is required unless
// the channel says tls (implicit TLS) or none; with a username it
// authenticates with the strongest mechanism both sides offer, PLAIN and
// LOGIN only over TLS.
func (s *senders) email(ctx context.Context, ch target, recipient string, n notice) error {
	set := ch.Settings
	to := set.To
	if recipient != "" {
		to = []string{recipient}
	}
	switch {
	case set.SMTPHost == "":
		return failure{err: errors.New("the e-mail channel has no SMTP host"), final: true}
	case set.From == "":
		return failure{err: errors.New("the e-mail channel has no from address"), final: true}
	case len(to) == 0:
		return failure{err: errors.New("the e-mail channel has no recipient"), final: true}
	}
	mode := set.TLS
	if mode == "" {
		mode = TLSStartTLS
	}
	port, ok := smtpPorts[mode]
	if !ok {
		return failure{err: fmt.Errorf("unknown TLS mode %q", mode), final: true}
	}
	if set.SMTPPort > 0 {
		port = set.SMTPPort
	}
	tlsConf := s.tls.Clone()
	tlsConf.ServerName = set.SMTPHost
	opts := []gomail.Option{gomail.WithPort(port), gomail.WithTimeout(s.opts.Timeout), gomail.WithTLSConfig(tlsConf)}
	if helo := heloName(s.opts.PublicOrigin); helo != "" {
		opts = append(opts, gomail.WithHELO(helo))
	}
	switch mode {
	case TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory), gomail.WithDialContextFunc(s.dialer.DialContext))
	case TLSImplicit:
		d := &tls.Dialer{NetDialer: s.dialer, Config: tlsConf}
		opts = append(opts, gomail.WithSSL(), gomail.WithTLSPolicy(gomail.NoTLS), gomail.WithDialContextFunc(d.DialContext))
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS), gomail.WithDialContextFunc(s.dialer.DialContext))
	}
	if set.Username != "" {
		opts = append(opts, gomail.WithUsername(set.Username), gomail.WithPassword(ch.secrets.Password))
		if mode == TLSImplicit {
			// go-mail cannot tell that a connection it did not dial itself
			// is encrypted, and its discovery would then rule out PLAIN
			// and LOGIN; this is its discovery's order without that rule.
			opts = append(opts, gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthSCRAMSHA256, gomail.SMTPAuthSCRAMSHA1,
				gomail.SMTPAuthCramMD5, gomail.SMTPAuthPlain, gomail.SMTPAuthLogin))
		} else {
			opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover))
		}
	}
	client, err := gomail.NewClient(set.SMTPHost, opts...)
	if err != nil {
		return failure{err: fmt.Errorf("SMTP client: %w", err), final: true}
	}
	msg, err := emailMessage(set.From, to, n)
	if err != nil {
		return err
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("SMTP %s:%d: no answer within %s", set.SMTPHost, port, s.opts.Timeout)
		}
		return fmt.Errorf("SMTP %s:%d: %w", set.SMTPHost, port, err)
	}
	return nil
}

// heloName is the name the host greets SMTP servers with: its public
// origin's, when that is a domain name, as servers may refuse a greeting
// that is not one; else go-mail's default, the machine's name.
func heloName(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	h := u.Hostname()
	if net.ParseIP(h) != nil || !strings.Contains(h, ".") {
		return ""
	}
	return h
}

// emailMessage is the notice as a message with a plain text part and an
// HTML alternative. Its Message-ID is made of the event and delivery ids,
// so that a message sent again is recognisably the same one, and
// X-Steward-Event-Id names the events it tells of.
func emailMessage(from string, to []string, n notice) (*gomail.Msg, error) {
	m := gomail.NewMsg()
	if err := m.From(from); err != nil {
		return nil, failure{err: fmt.Errorf("from address: %w", err), final: true}
	}
	if err := m.To(to...); err != nil {
		return nil, failure{err: fmt.Errorf("recipient address: %w", err), final: true}
	}
	m.Subject(truncate("[Steward] "+n.Heading(), 250))
	ids := make([]string, len(n.Items))
	for i, it := range n.Items {
		ids[i] = it.ID
	}
	domain := "steward.invalid"
	if a, err := mail.ParseAddress(from); err == nil {
		if at := strings.LastIndexByte(a.Address, '@'); at >= 0 {
			domain = a.Address[at+1:]
		}
	}
	m.SetMessageIDWithValue(fmt.Sprintf("%s.%d@%s", n.Items[0].ID, n.Items[0].DeliveryID, domain))
	m.SetGenHeader("X-Steward-Event-Id", strings.Join(ids, ","))
	m.SetDate()
	var text strings.Builder
	for i, it := range n.Items {
		if i > 0 {
			text.WriteString("\n----\n\n")
		}
		fmt.Fprintf(&text, "%s\n\nSeverity: %s\nTenant: %s\nTime: %s\n", it.Title, it.Severity, it.TenantLabel(), it.When())
		if it.Message != "" {
			fmt.Fprintf(&text, "\n%s\n", it.Message)
		}
		if it.URL != "" {
			fmt.Fprintf(&text, "\n%s\n", it.URL)
		}
	}
	var html bytes.Buffer
	if err := emailHTML.Execute(&html, n); err != nil {
		return nil, failure{err: fmt.Errorf("rendering the message: %w", err), final: true}
	}
	m.SetBodyString(gomail.TypeTextPlain, text.String())
	m.AddAlternativeString(gomail.TypeTextHTML, html.String())
	return m, nil
}

var emailHTML = template.Must(template.New("email").Parse(`<!doctype html>
<html><body style="font-family:sans-serif">
<h2>{{.Heading}}</h2>
{{range .Items}}<div style="margin:1em 0;padding-top:0.5em;border-top:1px solid #ccc">
<h3>{{.Title}}</h3>
<p><b>Severity:</b> {{.Severity}}<br><b>Tenant:</b> {{.TenantLabel}}<br><b>Time:</b> {{.When}}</p>
{{if .Message}}<p style="white-space:pre-wrap">{{.Message}}</p>{{end}}
{{if .URL}}<p><a href="{{.URL}}">Open in Steward</a></p>{{end}}
</div>
{{end}}</body></html>
`))
