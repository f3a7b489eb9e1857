package cloud

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"
)

// messagesPageSize is the page of messages asked for; Graph answers ten
// unless asked for up to a thousand.
const messagesPageSize = "50"

// MailMessage is a message of a mailbox folder, as Graph lists it.
type MailMessage struct {
	// ID is Graph's id of the message, for its attachments.
	ID      string
	Subject string
	// From is the sender's address.
	From           string
	Received       time.Time
	HasAttachments bool
}

type mailMessageJSON struct {
	ID               string    `json:"id"`
	Subject          string    `json:"subject"`
	ReceivedDateTime time.Time `json:"receivedDateTime"`
	HasAttachments   bool      `json:"hasAttachments"`
	From             *struct {
		EmailAddress struct {
			Address string `json:"address"`
		} `json:"emailAddress"`
	} `json:"from"`
}

// MailMessages calls fn for each message of a mailbox's folder received
// at or after since (every message when since is zero), oldest first,
// page by page: a caller that remembers the last message's time as a
// watermark reads only what arrived after it next time (and the messages
// of that very instant again). The mailbox is its address or user id,
// the folder a well-known name (inbox) or a folder id. It needs
// Mail.Read, an application permission an Exchange Online application
// access policy can restrict to the mailboxes it is for. An error from
// fn stops the listing and is returned as is.
func (g *GraphClient) MailMessages(ctx context.Context, mailbox, folder string, since time.Time, fn func(MailMessage) error) error {
	q := url.Values{
		"$select":  {"id,subject,from,receivedDateTime,hasAttachments"},
		"$orderby": {"receivedDateTime asc"},
		"$top":     {messagesPageSize},
	}
	if !since.IsZero() {
		// Graph wants the property of $orderby in $filter too, first.
		q.Set("$filter", "receivedDateTime ge "+since.UTC().Format(time.RFC3339))
	}
	path := "/users/" + url.PathEscape(mailbox) + "/mailFolders/" + url.PathEscape(folder) + "/messages"
	return graphList(ctx, g, g.op("list messages of "+mailbox), path, q, func(m *mailMessageJSON) error {
		out := MailMessage{ID: m.ID, Subject: m.Subject, Received: m.ReceivedDateTime, HasAttachments: m.HasAttachments}
		if m.From != nil {
			out.From = m.From.EmailAddress.Address
		}
		return fn(out)
	})
}

// MailAttachment is a file attached to a message, with its content.
type MailAttachment struct {
	ID          string
	Name        string
	ContentType string
	Content     []byte
}

type mailAttachmentJSON struct {
	ODataType    string `json:"@odata.type"`
	ID           string `json:"id"`
	Name         string `json:"name"`
	ContentType  string `json:"contentType"`
	ContentBytes string `json:"contentBytes"`
}

// fileAttachment is the @odata.type of an attachment that is a file;
// attached messages and links to files are others.
const fileAttachment = "#microsoft.graph.fileAttachment"

// MailAttachments calls fn for each file attachment of a message,
// decoded; attached messages and links are skipped. An error from fn
// stops the listing and is returned as is.
func (g *GraphClient) MailAttachments(ctx context.Context, mailbox, messageID string, fn func(MailAttachment) error) error {
	path := "/users/" + url.PathEscape(mailbox) + "/messages/" + url.PathEscape(messageID) + "/attachments"
	return graphList(ctx, g, g.op("list attachments of a message of "+mailbox), path, nil, func(a *mailAttachmentJSON) error {
		if a.ODataType != fileAttachment {
			return nil
		}
		content, err := base64.StdEncoding.DecodeString(a.ContentBytes)
		if err != nil {
			return fmt.Errorf("cloud: graph: attachment %q of message %s: contentBytes: %w", a.Name, messageID, err)
		}
		return fn(MailAttachment{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Content: content})
	})
}
