package graph

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stewardhq/steward/core/cloudsim"
	"github.com/stewardhq/steward/core/cloudsim/world"
)

// Mail: the messages of the world's mailboxes and their file attachments.

func (srv *server) registerMail(v string) {
	srv.handle("GET /"+v+"/users/{mailbox}/mailFolders/{folder}/messages", listMessages)
	srv.handle("GET /"+v+"/users/{mailbox}/messages/{id}/attachments", listAttachments)
}

// Paging of messages: Graph answers ten a page unless $top asks for up to
// a thousand.
const (
	messagesPageSize = 10
	maxMessagesTop   = 1000
)

// wellKnownFolders are the mail folder names Graph accepts in place of a
// folder's id.
var wellKnownFolders = []string{"inbox", "archive", "deleteditems", "drafts", "junkemail", "sentitems", "outbox", "clutter", "conversationhistory"}

type emailAddress struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

type recipient struct {
	EmailAddress emailAddress `json:"emailAddress"`
}

// messageJSON is a message as Graph lists it, its body left out.
type messageJSON struct {
	ID                   string      `json:"id"`
	CreatedDateTime      string      `json:"createdDateTime"`
	LastModifiedDateTime string      `json:"lastModifiedDateTime"`
	ReceivedDateTime     string      `json:"receivedDateTime"`
	SentDateTime         string      `json:"sentDateTime"`
	HasAttachments       bool        `json:"hasAttachments"`
	InternetMessageID    string      `json:"internetMessageId"`
	Subject              string      `json:"subject"`
	BodyPreview          string      `json:"bodyPreview"`
	Importance           string      `json:"importance"`
	ParentFolderID       string      `json:"parentFolderId"`
	IsRead               bool        `json:"isRead"`
	IsDraft              bool        `json:"isDraft"`
	Sender               recipient   `json:"sender"`
	From                 recipient   `json:"from"`
	ToRecipients         []recipient `json:"toRecipients"`

	received time.Time
}

// attachmentJSON is a fileAttachment with its content.
type attachmentJSON struct {
	ODataType            string  `json:"@odata.type"`
	MediaContentType     string  `json:"@odata.mediaContentType"`
	ID                   string  `json:"id"`
	LastModifiedDateTime string  `json:"lastModifiedDateTime"`
	Name                 string  `json:"name"`
	ContentType          string  `json:"contentType"`
	Size                 int     `json:"size"`
	IsInline             bool    `json:"isInline"`
	ContentID            *string `json:"contentId"`
	ContentLocation      *string `json:"contentLocation"`
	ContentBytes         string  `json:"contentBytes"`
}

// mailbox is the call's tenant's mailbox of the path's address; it
// answers 404 as Exchange does for any other.
func (c *call) mailbox() (*world.Mailbox, bool) {
	addr := c.r.PathValue("mailbox")
	for i, m := range c.world.Mailboxes {
		if strings.EqualFold(m.Address, addr) && strings.EqualFold(m.DirectoryTenantID, c.tenant.DirectoryTenantID) {
			return &c.world.Mailboxes[i], true
		}
	}
	c.error(http.StatusNotFound, "ErrorInvalidUser", fmt.Sprintf("The requested user '%s' is invalid.", addr))
	return nil, false
}

// folderOf is a message's folder, inbox when the world names none.
func folderOf(m world.MailMessage) string {
	if m.Folder == "" {
		return "inbox"
	}
	return m.Folder
}

func listMessages(c *call) {
	mb, ok := c.mailbox()
	if !ok {
		return
	}
	folder := c.r.PathValue("folder")
	known := slices.ContainsFunc(wellKnownFolders, func(f string) bool { return strings.EqualFold(f, folder) }) ||
		slices.ContainsFunc(mb.Messages, func(m world.MailMessage) bool { return strings.EqualFold(folderOf(m), folder) })
	if !known {
		c.error(http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	q := c.r.URL.Query()
	pageSize := messagesPageSize
	if raw := q.Get("$top"); raw != "" {
		top, err := strconv.Atoi(raw)
		if err != nil || top < 1 || top > maxMessagesTop {
			c.error(http.StatusBadRequest, "ErrorInvalidUrlQuery", fmt.Sprintf("The value '%s' of the query parameter '$top' is invalid.", raw))
			return
		}
		pageSize = top
	}
	desc := true
	switch strings.ToLower(strings.Join(strings.Fields(q.Get("$orderby")), " ")) {
	case "", "receiveddatetime desc":
	case "receiveddatetime", "receiveddatetime asc":
		desc = false
	default:
		c.error(http.StatusBadRequest, "ErrorInvalidUrlQuery", fmt.Sprintf("The query parameter '$orderby' is invalid: '%s'.", q.Get("$orderby")))
		return
	}
	var f filter
	if raw := q.Get("$filter"); raw != "" {
		var err error
		if f, err = parseFilter(raw, messageProps(messageJSON{})); err != nil {
			c.error(http.StatusBadRequest, "ErrorInvalidUrlQuery", err.Error())
			return
		}
	}
	var msgs []messageJSON
	for _, m := range mb.Messages {
		if !strings.EqualFold(folderOf(m), folder) {
			continue
		}
		if j := c.messageOf(mb, m); f.matches(messageProps(j)) {
			msgs = append(msgs, j)
		}
	}
	slices.SortStableFunc(msgs, func(a, b messageJSON) int {
		if desc {
			return b.received.Compare(a.received)
		}
		return a.received.Compare(b.received)
	})
	p := cloudsim.PageOf(c.r, c.srv.sim.URLs[cloudsim.Graph], len(msgs), pageSize)
	body := map[string]any{"@odata.context": c.context("users('" + mb.Address + "')/mailFolders('" + folder + "')/messages"),
		"value": slices.Clip(msgs[p.Start:p.End])}
	if p.NextLink != "" {
		body["@odata.nextLink"] = p.NextLink
	}
	c.ok(body)
}

// messageProps are a message's filterable properties.
func messageProps(m messageJSON) map[string]any {
	return map[string]any{"receivedDateTime": m.received, "subject": m.Subject, "hasAttachments": m.HasAttachments, "isRead": m.IsRead}
}

func (c *call) messageOf(mb *world.Mailbox, m world.MailMessage) messageJSON {
	received, _ := time.Parse(time.RFC3339, m.Received)
	sent := received.Add(-time.Minute)
	from := recipient{EmailAddress: emailAddress{Name: m.From, Address: m.From}}
	return messageJSON{
		ID: m.ID, CreatedDateTime: stamp(received), LastModifiedDateTime: stamp(received), ReceivedDateTime: stamp(received),
		SentDateTime: stamp(sent), HasAttachments: len(m.Attachments) > 0, InternetMessageID: "<" + derivedID("message", mb.Address, m.ID) + "@mail.example>",
		Subject: m.Subject, Importance: "normal", ParentFolderID: derivedID("mailFolder", mb.Address, folderOf(m)),
		Sender: from, From: from, ToRecipients: []recipient{{EmailAddress: emailAddress{Name: mb.Address, Address: mb.Address}}},
		received: received,
	}
}

func listAttachments(c *call) {
	mb, ok := c.mailbox()
	if !ok {
		return
	}
	id := c.r.PathValue("id")
	i := slices.IndexFunc(mb.Messages, func(m world.MailMessage) bool { return m.ID == id })
	if i < 0 {
		c.error(http.StatusNotFound, "ErrorItemNotFound", "The specified object was not found in the store.")
		return
	}
	m := mb.Messages[i]
	out := make([]attachmentJSON, 0, len(m.Attachments))
	for k, a := range m.Attachments {
		content, err := AttachmentContent(a)
		if err != nil {
			c.error(http.StatusInternalServerError, "ErrorInternalServerError", err.Error())
			return
		}
		ct := a.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		out = append(out, attachmentJSON{ODataType: "#microsoft.graph.fileAttachment", MediaContentType: ct,
			ID: derivedID("attachment", mb.Address, m.ID, strconv.Itoa(k)), LastModifiedDateTime: c.messageOf(mb, m).ReceivedDateTime,
			Name: a.Name, ContentType: ct, Size: len(content), ContentBytes: base64.StdEncoding.EncodeToString(content)})
	}
	listOf(c, "users('"+mb.Address+"')/messages('"+id+"')/attachments", out, nil)
}

// AttachmentContent is an attachment's bytes: its Base64 decoded, or its
// Text packed by its name (see world.MailAttachment).
func AttachmentContent(a world.MailAttachment) ([]byte, error) {
	if a.Base64 != "" {
		return base64.StdEncoding.DecodeString(a.Base64)
	}
	name := strings.ToLower(a.Name)
	var buf bytes.Buffer
	switch {
	case strings.HasSuffix(name, ".gz"):
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write([]byte(a.Text)); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
	case strings.HasSuffix(name, ".zip"):
		zw := zip.NewWriter(&buf)
		member := a.Name[:len(a.Name)-len(".zip")]
		if !strings.HasSuffix(strings.ToLower(member), ".xml") {
			member += ".xml"
		}
		w, err := zw.Create(member)
		if err == nil {
			_, err = w.Write([]byte(a.Text))
		}
		if err == nil {
			err = zw.Close()
		}
		if err != nil {
			return nil, err
		}
	default:
		return []byte(a.Text), nil
	}
	return buf.Bytes(), nil
}
