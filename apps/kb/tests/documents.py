"""Documents of each accepted format, built in the test (no binary fixtures)."""

import io


def docx_bytes(text: str) -> bytes:
    import docx

    document = docx.Document()
    for paragraph in text.split("\n"):
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def odt_bytes(text: str) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import P

    document = OpenDocumentText()
    for paragraph in text.split("\n"):
        document.text.addElement(P(text=paragraph))
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def pdf_bytes(text: str | None = None) -> bytes:
    """A one-page PDF showing `text` (ASCII, Helvetica), or a blank page (no text layer)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    writer.add_blank_page(width=400, height=200)
    if text:
        page = writer.pages[0]
        font = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
        )
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


HTML = """<!DOCTYPE html><html><head><title>Delivery</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>Delivery terms</h1>
<p>Courier delivery inside the ring road takes one business day and costs 350 roubles.</p>
<p>Orders above 5000 roubles are delivered free of charge to any address in the city.</p>
</article><footer>© Shop</footer></body></html>"""


def samples() -> dict[str, tuple[str, bytes, str]]:
    """format -> (file name, bytes, a phrase its text holds)."""
    return {
        "txt": ("faq.txt", "Возврат товара возможен в течение 14 дней.".encode(), "Возврат товара"),
        "md": ("faq.md", b"# Returns\n\nUnused items can be returned within **30 days**.", "returned within"),
        "html": ("delivery.html", HTML.encode(), "Courier delivery inside the ring road"),
        "csv": ("prices.csv", "item,price\nкабель,300\nзарядка,900\n".encode(), "item: зарядка"),
        "json": ("faq.json", b'{"faq": [{"q": "Hours?", "a": "We open at nine"}]}', "We open at nine"),
        "pdf": ("terms.pdf", pdf_bytes("Warranty lasts twelve months"), "Warranty lasts twelve months"),
        "docx": ("guide.docx", docx_bytes("Гарантия на технику 12 месяцев"), "Гарантия на технику"),
        "odt": ("guide.odt", odt_bytes("Самовывоз с Тверской улицы"), "Самовывоз с Тверской"),
    }
