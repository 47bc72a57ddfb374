"""Image-text embedders: the colour stub, a tiny CLIP built and trained offline, and the
OpenAI-compatible multimodal client against a respx-faked server."""

from __future__ import annotations

import base64
import json

import httpx
import numpy as np
import pytest
import respx

from memtools.embed import ImageEmbedder, TestImageEmbedder, image_embedder_for_name, image_embedder_from_spec
from memtools.embed.clip import TransformersImageEmbedder
from memtools.embed.openai_images import OpenAIImageEmbedder
from memtools.errors import ConfigError, EmbeddingError
from visual_support import colour_jpeg, tiny_clip_folder


def test_the_colour_stub_ranks_the_named_colour_first():
    embedder = TestImageEmbedder()
    images = embedder.embed_images([colour_jpeg(c, square=True) for c in ("blue", "red", "green")])
    assert images.shape == (3, 4) and images.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, rtol=1e-5)
    for i, word in enumerate(("blue", "red", "green")):
        assert int(np.argmax(images @ embedder.embed_query(f"a {word} square"))) == i


def test_the_colour_stub_refuses_what_is_not_an_image():
    with pytest.raises(EmbeddingError, match="could not decode an image of 9 bytes"):
        TestImageEmbedder().embed_images([b"not a jpg"])
    with pytest.raises(TypeError):
        TestImageEmbedder().embed_images(colour_jpeg("red"))


def test_specs_and_manifest_names_round_trip(tmp_path):
    assert isinstance(image_embedder_from_spec("test"), TestImageEmbedder)
    assert isinstance(image_embedder_for_name("test:colour"), TestImageEmbedder)
    assert isinstance(image_embedder_from_spec("openai:jina-clip-v2"), OpenAIImageEmbedder)
    assert image_embedder_from_spec("openai:jina-clip-v2").name == "openai:jina-clip-v2"
    assert isinstance(image_embedder_from_spec(f"hf:{tmp_path}"), TransformersImageEmbedder)
    with pytest.raises(ConfigError, match="unknown image embedder spec 'clip'; use one of: 'hf:"):
        image_embedder_from_spec("clip")


# --- a tiny CLIP ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_clip(tmp_path_factory):
    return tiny_clip_folder(tmp_path_factory.mktemp("clip") / "tiny-clip", train_steps=10)


def test_tiny_clip_embeds_images_and_text_by_path(trained_clip):
    embedder = TransformersImageEmbedder(trained_clip, batch_size=2)
    assert isinstance(embedder, ImageEmbedder)
    assert embedder.name == str(trained_clip.resolve())
    assert embedder.dim == 16 and embedder._loaded is None  # dim from config.json
    images = [colour_jpeg(c, square=True) for c in ("red", "blue", "green", "yellow", "red")]
    vectors = embedder.embed_images(images)
    assert vectors.shape == (5, 16) and vectors.dtype == np.float32 and embedder.device == "cpu"
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[4], atol=1e-6)  # batches of 2: the same image, the same vector
    one_by_one = np.concatenate([embedder.embed_images([image]) for image in images])
    np.testing.assert_allclose(vectors, one_by_one, atol=1e-5)
    assert embedder.embed_query("a red square").shape == (16,)
    assert embedder.embed_images([]).shape == (0, 16)


def test_tiny_clip_trained_in_the_test_finds_red_by_name(trained_clip):
    """Ten steps of contrastive training on red/blue/green squares: the text 'red' is closer to the
    red square than to the blue one (and the other way round), through the real processor and towers."""
    embedder = image_embedder_from_spec(f"hf:{trained_clip}")
    red, blue = embedder.embed_images([colour_jpeg("red", square=True), colour_jpeg("blue", square=True)])
    assert embedder.embed_query("red") @ red > embedder.embed_query("red") @ blue
    assert embedder.embed_query("blue") @ blue > embedder.embed_query("blue") @ red


def test_tiny_clip_errors_are_clear(tmp_path, trained_clip):
    with pytest.raises(EmbeddingError, match="no model folder at"):
        TransformersImageEmbedder(tmp_path / "nowhere").embed_query("red")
    with pytest.raises(EmbeddingError, match="could not decode an image of 3 bytes"):
        TransformersImageEmbedder(trained_clip).embed_images([b"abc"])
    with pytest.raises(ConfigError):
        TransformersImageEmbedder(trained_clip, batch_size=0)


# --- the OpenAI-compatible multimodal client -------------------------------------------------


def _vectors(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    data = []
    for i, item in enumerate(body["input"]):
        if isinstance(item, dict):  # an image: its first decoded byte picks the vector
            raw = base64.b64decode(item["image"].split(",", 1)[1])
            vector = [3.0, 4.0, 0.0] if raw[:2] == b"\xff\xd8" else [0.0, 0.0, 1.0]
        else:
            vector = [0.0, 2.0, 0.0]
        data.append({"index": i, "embedding": vector})
    return httpx.Response(200, json={"data": data[::-1]})


def test_openai_images_go_as_data_urls_in_batches():
    with respx.mock(base_url="http://embed.test/v1") as router:
        route = router.post("/embeddings").mock(side_effect=_vectors)
        embedder = OpenAIImageEmbedder("jina-clip-v2", base_url="http://embed.test/v1", api_key_env=None,
                                       batch_size=2, dim=3)
        vectors = embedder.embed_images([colour_jpeg("red"), colour_jpeg("blue"), colour_jpeg("green")])
        query = embedder.embed_query("a red van")
    assert route.call_count == 3  # images in batches of 2 and 1, then the query
    first = json.loads(route.calls[0].request.content)
    assert first["model"] == "jina-clip-v2" and len(first["input"]) == 2
    assert first["input"][0]["image"].startswith("data:image/jpeg;base64,/9j/")
    np.testing.assert_allclose(vectors, [[0.6, 0.8, 0.0]] * 3, rtol=1e-6)
    np.testing.assert_allclose(query, [0.0, 1.0, 0.0])
    assert json.loads(route.calls[2].request.content)["input"] == ["a red van"]


def test_openai_refuses_a_broken_image_before_any_request():
    with respx.mock(base_url="http://embed.test/v1", assert_all_called=False) as router:
        route = router.post("/embeddings").mock(side_effect=_vectors)
        embedder = OpenAIImageEmbedder("m", base_url="http://embed.test/v1", api_key_env=None, dim=3)
        with pytest.raises(EmbeddingError, match="could not decode an image"):
            embedder.embed_images([colour_jpeg("red"), b"\x89PNG broken"])
    assert route.call_count == 0


def test_openai_server_errors_name_the_server_and_its_message():
    with respx.mock(base_url="http://embed.test/v1") as router:
        router.post("/embeddings").mock(return_value=httpx.Response(400, json={"error": {"message": "images off"}}))
        embedder = OpenAIImageEmbedder("m", base_url="http://embed.test/v1", api_key_env=None, dim=3)
        with pytest.raises(EmbeddingError, match="HTTP 400 from http://embed.test/v1/embeddings: images off"):
            embedder.embed_images([colour_jpeg("red")])
