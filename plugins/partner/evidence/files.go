package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gabriel-vasile/mimetype"
	"github.com/google/uuid"

	"github.com/stewardhq/steward/sdk"
)

const (
	// DefaultMaxFileBytes bounds an uploaded file unless configured: below
	// the host's request body limit (STEWARD_MAX_BODY_BYTES, 8 MiB by
	// default), so the file's own limit is the one a caller meets.
	DefaultMaxFileBytes = 5 << 20
	// MaxFiles is how many files one evidence record may have.
	MaxFiles = 50
	// maxFileName bounds the original name kept for the download.
	maxFileName = 200
	// sniffBytes is how much of a file its type is detected from.
	sniffBytes = 3072
)

// fileType is a kind of file the store accepts, by extension.
type fileType struct {
	// served is the Content-Type a download carries (text types add the
	// detected charset).
	served string
	// detected are the types content detection may find in such a file.
	detected []string
	// declared are the Content-Types a client may send for such a file
	// besides served and application/octet-stream; browsers label some
	// files by the programs that open them.
	declared []string
}

const (
	docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
)

// fileTypes is the allow-list. Office documents are told apart from other
// ZIP archives by their parts, plain text from HTML and scripts by what
// the text holds, which net/http's sniffer does not do (it calls every
// ZIP application/zip and CSV or JSON text/plain).
var fileTypes = map[string]fileType{
	".pdf":  {served: "application/pdf", detected: []string{"application/pdf"}, declared: []string{"application/x-pdf"}},
	".png":  {served: "image/png", detected: []string{"image/png"}},
	".jpg":  {served: "image/jpeg", detected: []string{"image/jpeg"}, declared: []string{"image/jpg", "image/pjpeg"}},
	".jpeg": {served: "image/jpeg", detected: []string{"image/jpeg"}, declared: []string{"image/jpg", "image/pjpeg"}},
	".txt":  {served: "text/plain", detected: []string{"text/plain", "text/csv", "text/tab-separated-values", "application/json"}},
	".csv":  {served: "text/csv", detected: []string{"text/csv", "text/plain"}, declared: []string{"text/plain", "application/csv", "text/x-csv", "application/vnd.ms-excel"}},
	".json": {served: "application/json", detected: []string{"application/json"}, declared: []string{"text/json", "text/plain"}},
	".docx": {served: docx, detected: []string{docx}},
	".xlsx": {served: xlsx, detected: []string{xlsx}},
	".pptx": {served: pptx, detected: []string{pptx}},
}

// Extensions lists the accepted file extensions.
func Extensions() []string {
	out := make([]string, 0, len(fileTypes))
	for ext := range fileTypes {
		out = append(out, ext)
	}
	slices.Sort(out)
	return out
}

// servedTypes are the Content-Types downloads carry, for the OpenAPI
// document.
func servedTypes() []string {
	var out []string
	for _, t := range fileTypes {
		if !slices.Contains(out, t.served) {
			out = append(out, t.served)
		}
	}
	slices.Sort(out)
	return out
}

// FileView is an uploaded file as the API shows it.
type FileView struct {
	ID          string    `json:"id" format:"uuid"`
	EvidenceID  string    `json:"evidence_id" format:"uuid"`
	TenantID    string    `json:"tenant_id"`
	FileName    string    `json:"file_name" doc:"The uploaded file's name, sanitised: no folders, no control or reserved characters"`
	ContentType string    `json:"content_type" doc:"The type the content was checked to be; the download carries it"`
	SizeBytes   int64     `json:"size_bytes"`
	SHA256      string    `json:"sha256" doc:"SHA-256 of the content, hex"`
	UploadedBy  string    `json:"uploaded_by"`
	UploadedAt  time.Time `json:"uploaded_at"`
}

func fileViewOf(f *File) FileView {
	return FileView{ID: f.ID, EvidenceID: f.EvidenceID, TenantID: f.TenantID, FileName: f.FileName, ContentType: f.ContentType,
		SizeBytes: f.SizeBytes, SHA256: f.SHA256, UploadedBy: f.UploadedBy, UploadedAt: f.UploadedAt}
}

// uploadDoc documents the multipart upload body.
type uploadDoc struct {
	File string `json:"file" format:"binary" doc:"The file; its name's extension must be one the store accepts and its content must be of that type"`
}

type uploadIn struct {
	EvidencePath
	ContentType string `header:"Content-Type" doc:"multipart/form-data with its boundary"`
	RawBody     []byte
}

// uploaded is a stored file and where it is.
type uploaded struct {
	Location string `header:"Location"`
	Body     FileView
}

// FilePath names a file of evidence.
type FilePath struct {
	EvidencePath
	FileID string `path:"file_id" format:"uuid" doc:"The file's id"`
}

func (h *Handlers) fileRoutes() []sdk.Route {
	op := func(id, summary, doc string, errs ...int) sdk.Op {
		return sdk.Op{ID: "partner-evidence-file-" + id, Tags: []string{tag}, Summary: summary, Description: doc, Errors: errs}
	}
	upload := op("upload", "Upload a file as evidence",
		"A multipart/form-data body with one part, file. The name's extension must be one of "+strings.Join(Extensions(), ", ")+
			" and the content must be of that type (it is detected from the content, not taken from the name or the part's Content-Type): "+
			"a mismatch is a 422 and nothing is stored. A file is at most the plugin's max_file_bytes (5 MiB unless configured; 413 beyond, "+
			"naming body.file). The name is kept, sanitised, only for the download; the content is stored under a generated id. "+
			"Evidence keeps at most 50 files, and none can be added while it is submitted or accepted (409). A body that is not "+
			"multipart/form-data is a 415.", http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	upload.Status = http.StatusCreated
	upload.RequestBody = &huma.RequestBody{Description: "The file", Required: true, Content: map[string]*huma.MediaType{
		"multipart/form-data": {Schema: sdk.SchemaOf(uploadDoc{})}}}
	download := op("download", "Download a file of evidence",
		"The content as an attachment, with the type it was checked to be, X-Content-Type-Options: nosniff and the file's SHA-256 as ETag.",
		http.StatusNotFound)
	content := map[string]*huma.MediaType{}
	for _, t := range servedTypes() {
		content[t] = &huma.MediaType{}
	}
	download.Responses = map[string]*huma.Response{"200": {Description: "The file", Content: content}}
	return []sdk.Route{
		sdk.Post(evidencePath+"/{id}/files", upload, h.upload),
		sdk.Get(evidencePath+"/{id}/files", op("list", "The files of evidence", "A JSON array, oldest first (at most 50).", http.StatusNotFound), h.files),
		sdk.Get(evidencePath+"/{id}/files/{file_id}", download, h.download),
		sdk.Delete(evidencePath+"/{id}/files/{file_id}", op("delete", "Delete a file of evidence",
			"None can be deleted while the evidence is submitted or accepted (409).", http.StatusNotFound, http.StatusConflict), h.deleteFile),
	}
}

func (h *Handlers) maxFileBytes() int64 {
	if h.MaxFileBytes > 0 {
		return h.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// errTooLarge ends a file's copy once it passes the limit.
var errTooLarge = errors.New("evidence: file too large")

// errBodyBroken ends a file's copy when the request body breaks off (a
// multipart body cut short): the caller's mistake, not the store's.
var errBodyBroken = errors.New("evidence: request body broken")

// capped reads a file part, failing with errTooLarge past left bytes and
// with errBodyBroken when the part cannot be read to its end.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	switch {
	case c.left < 0:
		return n, errTooLarge
	case err != nil && !errors.Is(err, io.EOF):
		return n, fmt.Errorf("%w: %w", errBodyBroken, err)
	}
	return n, err
}

func unsupported(detail string) *sdk.Problem {
	return &sdk.Problem{Title: http.StatusText(http.StatusUnsupportedMediaType), Status: http.StatusUnsupportedMediaType, Detail: detail}
}

func tooLarge(limit int64) *sdk.Problem {
	p := &sdk.Problem{Title: http.StatusText(http.StatusRequestEntityTooLarge), Status: http.StatusRequestEntityTooLarge,
		Detail: fmt.Sprintf("body.file: must be at most %d bytes", limit)}
	p.Errors = []sdk.ErrorDetail{{Location: "body.file", Message: fmt.Sprintf("must be at most %d bytes", limit)}}
	return p
}

// upload writes the body's file part to the blob store: its first bytes
// are checked against the name's type before anything is written, the
// rest is copied through a cap, and the record is added once the blob is
// whole. A failure after the blob is written removes it.
func (h *Handlers) upload(ctx context.Context, in *uploadIn) (*uploaded, error) {
	e, err := h.find(ctx, in.EvidencePath)
	if err != nil {
		return nil, err
	}
	if frozen(e.Status) {
		return nil, sdk.Conflict("evidence that is " + e.Status + " keeps its files; move it to in_progress first")
	}
	ct, params, _ := mime.ParseMediaType(in.ContentType)
	if ct != "multipart/form-data" || params["boundary"] == "" {
		return nil, unsupported("the body must be multipart/form-data with a file part")
	}
	mr := multipart.NewReader(bytes.NewReader(in.RawBody), params["boundary"])
	part, err := mr.NextPart()
	switch {
	case errors.Is(err, io.EOF):
		return nil, sdk.Invalid("body.file", "is required")
	case err != nil:
		return nil, sdk.Invalid("body", "must be a well-formed multipart/form-data body")
	case part.FormName() != "file":
		return nil, sdk.Invalid("body."+printable(part.FormName()), "is not a field of an upload; send the file part alone")
	}
	name, kind, err := checkName(part)
	if err != nil {
		return nil, err
	}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(part, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, sdk.Invalid("body", "must be a well-formed multipart/form-data body")
	}
	head = head[:n]
	served, refused := checkContent(head, kind, name)
	if refused != nil {
		// A refused content is audited: a file that is not what it says
		// may be an attempt to plant one.
		h.audit(ctx, "partner_evidence.file_upload.failure", "failure", e.TenantID, auditFile, "",
			map[string]any{"evidence_id": e.ID, "file_name": name, "reason": refused.Errors[0].Message})
		return nil, refused
	}
	limit := h.maxFileBytes()
	f := &File{ID: uuid.NewString(), EvidenceID: e.ID, TenantID: e.TenantID, FileName: name, ContentType: served,
		UploadedBy: sdk.PrincipalFrom(ctx).ID, UploadedAt: h.now()}
	f.SizeBytes, f.SHA256, err = h.Blobs.Put(ctx, f.ID, &capped{r: io.MultiReader(bytes.NewReader(head), part), left: limit})
	if err != nil {
		switch {
		case errors.Is(err, errTooLarge):
			err = tooLarge(limit)
		case errors.Is(err, errBodyBroken):
			err = sdk.Invalid("body", "must be a well-formed multipart/form-data body")
		case !errors.Is(err, context.Canceled):
			err = fmt.Errorf("store file: %w", err)
		}
		return nil, err
	}
	if err := h.finishUpload(ctx, mr, f); err != nil {
		if derr := h.Blobs.Delete(context.WithoutCancel(ctx), f.ID); derr != nil && h.Logger != nil {
			h.Logger.Error("uploaded blob not removed", "file_id", f.ID, "error", derr)
		}
		return nil, err
	}
	h.audit(ctx, "partner_evidence.file_upload.success", "success", e.TenantID, auditFile, f.ID,
		map[string]any{"evidence_id": e.ID, "requirement_id": e.RequirementID, "file_name": f.FileName, "content_type": f.ContentType,
			"size_bytes": f.SizeBytes, "sha256": f.SHA256})
	return &uploaded{Location: evidencePath + "/" + e.ID + "/files/" + f.ID, Body: fileViewOf(f)}, nil
}

// finishUpload refuses a body with parts after the file, then records the
// file under its evidence.
func (h *Handlers) finishUpload(ctx context.Context, mr *multipart.Reader, f *File) error {
	if part, err := mr.NextPart(); !errors.Is(err, io.EOF) {
		if err != nil {
			return sdk.Invalid("body", "must be a well-formed multipart/form-data body")
		}
		return sdk.Invalid("body."+printable(part.FormName()), "is not a field of an upload; send the file part alone")
	}
	switch err := h.Store.AddFile(ctx, f, MaxFiles); {
	case errors.Is(err, ErrChanged):
		return sdk.Conflict("the evidence was submitted meanwhile; its files are frozen")
	case errors.Is(err, ErrTooManyFiles):
		return sdk.Invalid("body.file", "the evidence has %d files already; delete one first", MaxFiles)
	default:
		return err
	}
}

// checkName reads the part's file name, sanitised, and the allowed type
// its extension names; the part's own Content-Type, when it says more
// than application/octet-stream, must agree with it.
func checkName(part *multipart.Part) (string, fileType, error) {
	_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	raw, ok := params["filename"]
	if !ok {
		return "", fileType{}, sdk.Invalid("body.file", "must be a file part with a file name")
	}
	name := SanitizeFileName(raw)
	ext := strings.ToLower(path.Ext(name))
	kind, ok := fileTypes[ext]
	if name == "" || !ok {
		return "", fileType{}, sdk.Invalid("body.file", "the file name must end in one of %s", strings.Join(Extensions(), ", "))
	}
	if declared, _, err := mime.ParseMediaType(part.Header.Get("Content-Type")); err == nil && declared != "application/octet-stream" &&
		declared != kind.served && !slices.Contains(kind.declared, declared) {
		return "", fileType{}, sdk.Invalid("body.file", "is declared as %s, which is not the type of a %s file", declared, ext)
	}
	return name, kind, nil
}

// checkContent detects the type of a file from its first bytes and
// returns the Content-Type to serve it with, or a 422 when the content is
// not of the kind its name says (an HTML page or a script named
// report.pdf) or is empty.
func checkContent(head []byte, kind fileType, name string) (string, *sdk.Problem) {
	if len(head) == 0 {
		return "", sdk.Invalid("body.file", "is empty")
	}
	detected := mimetype.Detect(head)
	base, params, _ := mime.ParseMediaType(detected.String())
	if !slices.Contains(kind.detected, base) {
		return "", sdk.Invalid("body.file", "the content is %s, not what the name %s says", base, name)
	}
	if cs := params["charset"]; strings.HasPrefix(kind.served, "text/") && cs != "" {
		return mime.FormatMediaType(kind.served, map[string]string{"charset": cs}), nil
	}
	return kind.served, nil
}

// SanitizeFileName is the part of a client's file name kept for a
// download: the last element of either kind of path, without control
// characters, characters reserved in file names or quoting, leading dots
// or spaces, at most 200 characters. It is metadata only: files are
// stored under generated ids.
func SanitizeFileName(raw string) string {
	raw = strings.ToValidUTF8(raw, "")
	if i := strings.LastIndexAny(raw, `/\`); i >= 0 {
		raw = raw[i+1:]
	}
	clean := strings.Map(func(r rune) rune {
		switch {
		case unicode.IsControl(r) || r >= 0x80 && r < 0xa0:
			return -1
		case strings.ContainsRune(`"*:<>?|%;`, r):
			return '_'
		}
		return r
	}, raw)
	clean = strings.TrimLeft(strings.TrimSpace(clean), ". ")
	for utf8.RuneCountInString(clean) > maxFileName {
		ext := path.Ext(clean)
		runes := []rune(strings.TrimSuffix(clean, ext))
		keep := maxFileName - utf8.RuneCountInString(ext)
		if keep < 1 || len(runes) <= keep {
			runes = []rune(clean)[:maxFileName]
			ext = ""
		} else {
			runes = runes[:keep]
		}
		clean = string(runes) + ext
	}
	return clean
}

// printable is a form name as a location may echo it.
func printable(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, ""))
}

// contentDisposition is an attachment header naming the file in ASCII
// (filename, for old clients) and in UTF-8 (filename*, RFC 6266).
func contentDisposition(name string) string {
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)
	var enc strings.Builder
	for _, b := range []byte(name) {
		if b < 0x80 && (b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("!#$&+-.^_`|~", b) >= 0) {
			enc.WriteByte(b)
			continue
		}
		fmt.Fprintf(&enc, "%%%02X", b)
	}
	return `attachment; filename="` + ascii + `"; filename*=UTF-8''` + enc.String()
}

// findFile returns the file of the path under the caller's evidence, or
// a 404.
func (h *Handlers) findFile(ctx context.Context, in FilePath) (*Evidence, *File, error) {
	e, err := h.find(ctx, in.EvidencePath)
	if err != nil {
		return nil, nil, err
	}
	f, err := h.Store.File(ctx, e.ID, in.FileID)
	if err == nil && f == nil {
		err = sdk.NotFound("no file " + in.FileID + " of evidence " + e.ID)
	}
	return e, f, err
}

func (h *Handlers) files(ctx context.Context, in *EvidencePath) (*[]FileView, error) {
	e, err := h.find(ctx, *in)
	if err != nil {
		return nil, err
	}
	files, err := h.Store.Files(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	out := make([]FileView, len(files))
	for i := range files {
		out[i] = fileViewOf(&files[i])
	}
	return &out, nil
}

// download streams the file's blob, opened before the answer starts so a
// missing one is a 500 rather than a cut-off body.
// downloadOut is a file's download: its headers, then its content.
type downloadOut struct {
	ContentDisposition string `header:"Content-Disposition" doc:"attachment, with the sanitised name as filename (ASCII) and filename* (UTF-8)"`
	ETag               string `header:"ETag" doc:"The content's SHA-256, quoted"`
	Body               func(huma.Context)
}

func (h *Handlers) download(ctx context.Context, in *FilePath) (*downloadOut, error) {
	_, f, err := h.findFile(ctx, *in)
	if err != nil {
		return nil, err
	}
	blob, err := h.Blobs.Open(ctx, f.ID)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("blob of file %s is missing: %w", f.ID, err)
		}
		return nil, err
	}
	return &downloadOut{ContentDisposition: contentDisposition(f.FileName), ETag: `"` + f.SHA256 + `"`, Body: func(hc huma.Context) {
		defer blob.Close()
		hc.SetHeader("Content-Type", f.ContentType)
		hc.SetHeader("Content-Length", strconv.FormatInt(f.SizeBytes, 10))
		hc.SetHeader("X-Content-Type-Options", "nosniff")
		hc.SetHeader("Cache-Control", "private, no-store")
		if _, err := io.Copy(hc.BodyWriter(), blob); err != nil && h.Logger != nil {
			h.Logger.Warn("file download cut short", "file_id", f.ID, "error", err)
		}
	}}, nil
}

func (h *Handlers) deleteFile(ctx context.Context, in *FilePath) (*sdk.Empty, error) {
	e, f, err := h.findFile(ctx, *in)
	if err != nil {
		return nil, err
	}
	if frozen(e.Status) {
		return nil, sdk.Conflict("evidence that is " + e.Status + " keeps its files; move it to in_progress first")
	}
	if err := h.Store.DeleteFile(ctx, f, sdk.PrincipalFrom(ctx).ID, h.now()); err != nil {
		if errors.Is(err, ErrChanged) {
			err = sdk.Conflict("the evidence was submitted meanwhile, or the file is gone")
		}
		return nil, err
	}
	// The record is gone, so the file is; a blob left behind is only
	// space, and is logged.
	if err := h.Blobs.Delete(context.WithoutCancel(ctx), f.ID); err != nil && h.Logger != nil {
		h.Logger.Error("deleted file's blob not removed", "file_id", f.ID, "error", err)
	}
	h.audit(ctx, "partner_evidence.file_delete.success", "success", e.TenantID, auditFile, f.ID,
		map[string]any{"evidence_id": e.ID, "requirement_id": e.RequirementID, "file_name": f.FileName, "sha256": f.SHA256})
	return &sdk.Empty{}, nil
}
