"""Knowledge-base writes: rules, sources, uploaded documents and their ingestion.

Embedding happens before the write's transaction (a provider call never holds a transaction or a
lock); a provider failure raises `EmbedProviderFailed` (502) before anything is stored, so the
route's idempotency key is never claimed. Every change to a widget's chunks bumps `KbIndex.version`
in its own transaction (search caches revalidate on it).

One module per job: `indexing` (limits, the index version, embedding for a write), `rules` (manual
rules and sources), `uploads` (documents and their ingestion), `crawls` (the site crawler's
configuration, runs and pages). Callers import from this package; a test that patches a name patches
it in the module that looks it up.
"""

from .. import hooks as hooks
from .crawls import CRAWL_SOURCE_PREFIX as CRAWL_SOURCE_PREFIX
from .crawls import MAX_FAILURES_KEPT as MAX_FAILURES_KEPT
from .crawls import SCHEDULE_EVERY as SCHEDULE_EVERY
from .crawls import STALE_CRAWL as STALE_CRAWL
from .crawls import check_start_url as check_start_url
from .crawls import check_start_urls as check_start_urls
from .crawls import crawl_should_stop as crawl_should_stop
from .crawls import crawled_page as crawled_page
from .crawls import crawled_urls as crawled_urls
from .crawls import delete_crawler as delete_crawler
from .crawls import finish_crawl_run as finish_crawl_run
from .crawls import index_crawled_page as index_crawled_page
from .crawls import pause_crawl_run as pause_crawl_run
from .crawls import queue_scheduled_crawls as queue_scheduled_crawls
from .crawls import replace_crawler as replace_crawler
from .crawls import resume_crawl_run as resume_crawl_run
from .crawls import retire_crawled_page as retire_crawled_page
from .crawls import start_crawl_run as start_crawl_run
from .crawls import touch_crawled_page as touch_crawled_page
from .indexing import CONTENT_MAX_CHARS as CONTENT_MAX_CHARS
from .indexing import DOC_ID_MAX_CHARS as DOC_ID_MAX_CHARS
from .indexing import EMBED_BATCH as EMBED_BATCH
from .indexing import MAX_CHUNKS_PER_DOCUMENT as MAX_CHUNKS_PER_DOCUMENT
from .indexing import MAX_DOCUMENTS as MAX_DOCUMENTS
from .indexing import MAX_FILE_BYTES as MAX_FILE_BYTES
from .indexing import STALE_PROCESSING as STALE_PROCESSING
from .indexing import WORKER_LOST as WORKER_LOST
from .indexing import bump_version as bump_version
from .indexing import embed_detail as embed_detail
from .indexing import embed_texts as embed_texts
from .rules import create_rule as create_rule
from .rules import delete_rule as delete_rule
from .rules import delete_source as delete_source
from .rules import update_rule as update_rule
from .uploads import create_document as create_document
from .uploads import delete_document as delete_document
from .uploads import embed_chunks as embed_chunks
from .uploads import ingest_document as ingest_document
from .uploads import store_chunks as store_chunks
from .uploads import sweep_stale_documents as sweep_stale_documents
