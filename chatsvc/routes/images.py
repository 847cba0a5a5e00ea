"""GET /api/images/{id}: a stored image of the caller's messages (404 to anyone else).

A data URL's image is served from its file, as the type it was sent as; an image
kept by reference redirects to its https URL.
"""

from __future__ import annotations

from litestar import Request, Response, Router, get
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException
from litestar.openapi import ResponseSpec
from litestar.params import FromPath
from litestar.response import Redirect

from chatsvc._threads import in_thread
from chatsvc.images import MessageImages


@get("/images/{image_id:str}", summary="A stored image of the caller's", status_code=200,
     responses={
         200: ResponseSpec(bytes, media_type="image/*",
                           description="The image, as the type it was sent as"),
         302: ResponseSpec(None, description="An image kept by reference: its https URL")})
async def get_image(request: Request, images: NamedDependency[MessageImages],
                    image_id: FromPath[str]) -> Response:
    image, data = await in_thread(images.bytes_of, request.user.id, image_id)
    if image.url is not None:
        return Redirect(image.url, status_code=302)
    if data is None:
        raise NotFoundException(f"the file of image {image_id} is gone")
    # nosniff: browsers take the type as given; private: never kept by a shared cache.
    return Response(data, media_type=image.mime, headers={
        "Cache-Control": "private, max-age=3600", "X-Content-Type-Options": "nosniff"})


router = Router(path="/api", route_handlers=[get_image], tags=["chat"])
