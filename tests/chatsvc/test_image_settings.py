"""LLM_VISION and the image limits: the body limit grows to carry a message's images
unless set explicitly, and an explicit one too small for one image stops start-up."""

from __future__ import annotations

import pytest

from chatsvc import Settings, SettingsError

MIB = 1024 * 1024


def test_vision_is_off_by_default_and_the_body_limit_stays():
    settings = Settings.from_env({})
    assert not settings.vision_enabled
    assert (settings.max_images, settings.max_image_bytes) == (4, 5 * MIB)
    assert settings.max_body_bytes == 256 * 1024


def test_with_vision_the_default_body_limit_fits_a_messages_images():
    settings = Settings.from_env({"LLM_VISION": "true", "CHATSVC_MAX_IMAGES": "2",
                                  "CHATSVC_MAX_IMAGE_BYTES": "3000"})
    assert settings.vision_enabled
    assert settings.max_body_bytes == 256 * 1024 + 2 * 4000  # base64: 4 bytes for 3


def test_a_bundled_model_never_sees_whatever_llm_vision_says():
    settings = Settings.from_env({"LLM_VISION": "true", "LLM_MODEL": "gemma-3-270m"})
    assert settings.llm_vision and not settings.vision_enabled
    assert settings.max_body_bytes == 256 * 1024


def test_an_explicit_body_limit_is_kept_when_it_holds_one_image():
    settings = Settings.from_env({"LLM_VISION": "1", "CHATSVC_MAX_BODY_BYTES": "9000",
                                  "CHATSVC_MAX_IMAGE_BYTES": "6000"})
    assert settings.max_body_bytes == 9000


def test_an_explicit_body_limit_too_small_for_one_image_stops_start_up():
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"LLM_VISION": "on", "CHATSVC_MAX_BODY_BYTES": "7999",
                           "CHATSVC_MAX_IMAGE_BYTES": "6000"})
    assert "CHATSVC_MAX_BODY_BYTES" in str(error.value)
    assert "CHATSVC_MAX_IMAGE_BYTES" in str(error.value)


@pytest.mark.parametrize("env, var", [({"LLM_VISION": "maybe"}, "LLM_VISION"),
                                      ({"CHATSVC_MAX_IMAGES": "0"}, "CHATSVC_MAX_IMAGES"),
                                      ({"CHATSVC_MAX_IMAGE_BYTES": "-1"},
                                       "CHATSVC_MAX_IMAGE_BYTES")])
def test_bad_image_settings_name_their_variable(env, var):
    with pytest.raises(SettingsError, match=var):
        Settings.from_env(env)
