"""Code-fault images: build each code fault's release from the app's pinned upstream source with the entry's
source change applied, check it with the service's own tests, and record what was built.

The simulated cluster never needs these images; a real cluster does. Nothing upstream is fetched here: the
user brings a checkout of the pinned version.
"""
