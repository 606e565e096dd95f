// Command fake-gcs-xml: fake-gcs-server's in-memory GCS (github.com/fsouza/fake-gcs-server,
// its fakestorage library, at the version go.mod pins) serving, besides its JSON and upload APIs,
// the object writes of GCS's XML API that it does not route: PUT of an object (plain, or a copy
// with x-goog-copy-source) and DELETE; and its listing's start-after, which it ignores. The
// object_store crate (delta-rs, polars) reaches GCS only through the XML API; fake-gcs-server
// serves its listing and reads but answers a PUT with 400 "invalid uploadType"
// (fsouza/fake-gcs-server#331; the XML writes of #1164/#2092 are unmerged and ignore
// preconditions). Each XML write is handed to the server's own JSON API, so
// x-goog-if-generation-match (object_store's create-if-absent: delta-rs's commits) is checked
// atomically by its storage, as its uploads' ifGenerationMatch is. Run by reconciler/devtools/gcs.py.
package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/gorilla/handlers"
)

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 4443, "port to listen on")
	requests := flag.Bool("log-requests", false, "log each request to stderr")
	flag.Parse()
	address := fmt.Sprintf("%s:%d", *host, *port)
	server, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", Host: *host, Port: uint16(*port), NoListener: true,
		// The XML API's requests name this host (object_store's base URL is the server's own).
		PublicHost: address, ExternalURL: "http://" + address,
	})
	if err != nil {
		log.Fatalf("fake-gcs-xml: %v", err)
	}
	var handler http.Handler = xmlWrites{inner: server.HTTPHandler(), publicHost: address}
	if *requests {
		handler = handlers.LoggingHandler(os.Stderr, handler)
	}
	log.Fatal(http.ListenAndServe(address, handler))
}

// xmlWrites serves the XML API's object writes through inner's JSON API; all else goes to inner.
type xmlWrites struct {
	inner      http.Handler
	publicHost string
}

// Paths of the JSON, upload, download and batch APIs and the server's own: never XML objects.
var notBuckets = map[string]bool{"storage": true, "upload": true, "download": true, "batch": true, "_internal": true}

func (x xmlWrites) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, object, ok := x.xmlObject(r)
	switch {
	case !ok && x.listsAfter(r):
		x.listAfter(w, r)
	case !ok:
		x.inner.ServeHTTP(w, r)
	case r.Method == http.MethodDelete:
		x.reply(w, x.call(http.MethodDelete, jsonObject(bucket, object), nil, nil))
	case r.Method != http.MethodPut:
		x.inner.ServeHTTP(w, r)
	case r.Header.Get("x-goog-copy-source") != "":
		x.reply(w, x.copy(r, bucket, object))
	default:
		// Content-Type, Cache-Control, x-goog-meta-*: the JSON media upload reads them alike.
		x.reply(w, x.upload(bucket, object, r.Header.Get("x-goog-if-generation-match"), r.Body, r.Header))
	}
}

// xmlObject: the bucket and object an XML API request names (`/bucket/object` on the public host,
// no uploadType or signed URL's query, which fake-gcs-server serves itself).
func (x xmlWrites) xmlObject(r *http.Request) (string, string, bool) {
	query := r.URL.Query()
	if r.Host != x.publicHost || query.Has("uploadType") || query.Has("X-Goog-Algorithm") {
		return "", "", false
	}
	bucket, escaped, found := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	object, err := url.PathUnescape(escaped)
	if !found || notBuckets[bucket] || object == "" || err != nil {
		return "", "", false
	}
	return bucket, object, true
}

// listsAfter: an XML listing from a key on (object_store's list_with_offset; fake-gcs-server
// ignores start-after and lists all, which delta-rs reads as a table newer than it is).
func (x xmlWrites) listsAfter(r *http.Request) bool {
	path := strings.Trim(r.URL.EscapedPath(), "/")
	return r.Method == http.MethodGet && r.Host == x.publicHost && r.URL.Query().Has("start-after") &&
		path != "" && !strings.Contains(path, "/") && !notBuckets[path]
}

func (x xmlWrites) listAfter(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	after := query.Get("start-after")
	query.Del("start-after")
	listed := x.call(http.MethodGet, r.URL.EscapedPath()+"?"+query.Encode(), nil, nil)
	var result fakestorage.ListBucketResult
	if listed.Code != http.StatusOK || xml.Unmarshal(listed.Body.Bytes(), &result) != nil {
		w.WriteHeader(listed.Code)
		_, _ = w.Write(listed.Body.Bytes())
		return
	}
	contents := result.Contents[:0]
	for _, content := range result.Contents {
		if content.Key > after {
			contents = append(contents, content)
		}
	}
	prefixes := result.CommonPrefixes[:0]
	for _, prefix := range result.CommonPrefixes {
		if prefix.Prefix > after && !strings.HasPrefix(after, prefix.Prefix) {
			prefixes = append(prefixes, prefix)
		}
	}
	result.Contents, result.CommonPrefixes, result.KeyCount = contents, prefixes, len(contents)
	body, err := xml.Marshal(result)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	_, _ = w.Write([]byte(xml.Header + string(body)))
}

// copy: the source object's bytes created at the destination, under the request's precondition
// (the JSON API's copyTo takes no ifGenerationMatch in fake-gcs-server).
func (x xmlWrites) copy(r *http.Request, bucket, object string) *httptest.ResponseRecorder {
	source, err := url.PathUnescape(strings.TrimPrefix(r.Header.Get("x-goog-copy-source"), "/"))
	sourceBucket, sourceObject, found := strings.Cut(source, "/")
	if err != nil || !found {
		return failed(http.StatusBadRequest, "x-goog-copy-source is not /bucket/object")
	}
	read := x.call(http.MethodGet, "/download"+jsonObject(sourceBucket, sourceObject)+"?alt=media", nil, nil)
	if read.Code != http.StatusOK {
		return read
	}
	return x.upload(bucket, object, r.Header.Get("x-goog-if-generation-match"), read.Body,
		http.Header{"Content-Type": {read.Header().Get("Content-Type")}})
}

func (x xmlWrites) upload(bucket, object, generation string, body io.Reader, header http.Header) *httptest.ResponseRecorder {
	query := url.Values{"uploadType": {"media"}, "name": {object}}
	if generation != "" {
		query.Set("ifGenerationMatch", generation)
	}
	return x.call(http.MethodPost, "/upload/storage/v1/b/"+url.PathEscape(bucket)+"/o?"+query.Encode(), body, header)
}

// call: one request to inner, answered in memory.
func (x xmlWrites) call(method, target string, body io.Reader, header http.Header) *httptest.ResponseRecorder {
	request := httptest.NewRequest(method, target, body)
	request.Host = x.publicHost
	for name, values := range header {
		request.Header[name] = values
	}
	recorder := httptest.NewRecorder()
	x.inner.ServeHTTP(recorder, request)
	return recorder
}

// reply as the XML API does: no body on success, the object's ETag and generation as headers.
func (x xmlWrites) reply(w http.ResponseWriter, done *httptest.ResponseRecorder) {
	if done.Code/100 != 2 {
		w.WriteHeader(done.Code)
		_, _ = w.Write(done.Body.Bytes())
		return
	}
	var made struct {
		Etag       string `json:"etag"`
		Generation string `json:"generation"`
	}
	if json.Unmarshal(done.Body.Bytes(), &made) == nil && made.Etag != "" {
		w.Header().Set("ETag", strconv.Quote(strings.Trim(made.Etag, `"`)))
		w.Header().Set("x-goog-generation", made.Generation)
	}
	w.WriteHeader(http.StatusOK)
}

func jsonObject(bucket, object string) string {
	return "/storage/v1/b/" + url.PathEscape(bucket) + "/o/" + url.PathEscape(object)
}

func failed(status int, message string) *httptest.ResponseRecorder {
	recorder := httptest.NewRecorder()
	recorder.WriteHeader(status)
	_, _ = io.Copy(recorder, bytes.NewBufferString(message))
	return recorder
}
