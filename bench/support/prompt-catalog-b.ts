/** bench/prompt's generated tools, part B: leisure and the home: music, travel, cooking, fitness, smart home. */
import { type CatalogDomain, tool } from './prompt-catalog.js';

export const CATALOG_B: CatalogDomain[] = [
  {
    domain: 'music',
    tools: [
      tool('music_play', 'wn', 'Start playing a song, album, artist, genre or playlist on a speaker or on the phone.', [
        'query!:s:What to play.',
        'device:s:Speaker or room name (default the active device).',
        'shuffle:b:Shuffle.',
      ]),
      tool('music_pause', 'wn', 'Pause or resume playback, or skip to the next or previous track.', [
        'action!:e(pause|resume|next|previous):What to do.',
      ]),
      tool('music_search_catalog', 'r', 'Search the streaming catalogue for songs, albums, artists and public playlists.', [
        'query!:s:Words to search.',
        'type:e(track|album|artist|playlist):Kind of result.',
      ]),
      tool('music_create_playlist', 'wn', 'Create a new playlist in the library, optionally seeded with tracks.', [
        'name!:s:Playlist name.',
        'tracks:s[]:Track ids to add.',
        'public:b:Visible on the profile.',
      ]),
      tool('music_add_to_playlist', 'wn', "Add tracks to one of the user's playlists.", [
        'playlist!:s:Playlist name or id.',
        'tracks!:s[]:Track ids.',
      ]),
      tool('music_now_playing', 'r', 'What is playing right now: track, artist, album and on which device.', []),
      tool('music_recommend', 'r', 'Recommend tracks like given songs or artists, or for a mood or genre.', [
        'seed_tracks:s[]:Songs to start from.',
        'seed_artists:s[]:Artists to start from.',
        'mood:s:Mood or genre, e.g. focus, upbeat, chill.',
      ]),
    ],
  },
  {
    domain: 'travel',
    tools: [
      tool(
        'travel_search_flights',
        'r',
        'Search flights between two airports on given dates for a number of passengers and a cabin class; returns fares, stops and durations.',
        [
          'origin!:s:Departure airport or city.',
          'destination!:s:Arrival airport or city.',
          'depart_date!:date:Outbound day.',
          'return_date:date:Return day for a round trip.',
          'passengers:i:Travellers (default 1).',
          'cabin:e(economy|premium|business|first):Cabin.',
        ],
      ),
      tool('travel_book_flight', 'wp', 'Book a flight offer for the named passengers and pay with the saved card.', [
        'offer_id!:s:From travel_search_flights.',
        'passengers!:s[]:Full names as on the passport.',
      ]),
      tool(
        'travel_search_hotels',
        'r',
        'Find hotels in a city or near a landmark for check-in and check-out dates, with nightly price, guest rating and cancellation policy.',
        [
          'location!:s:City, neighbourhood or landmark.',
          'check_in!:date:Arrival.',
          'check_out!:date:Departure.',
          'guests:i:Guests.',
          'max_price:n:Most per night.',
        ],
      ),
      tool('travel_book_hotel', 'wp', 'Reserve a hotel room from a search result with the saved card.', [
        'offer_id!:s:From travel_search_hotels.',
        'guest_name!:s:Name on the booking.',
      ]),
      tool('travel_get_itinerary', 'r', "The user's upcoming trips: flights, hotel stays, car rentals and their confirmation numbers.", [
        'trip:s:Trip name or destination (default all upcoming).',
      ]),
      tool('travel_flight_status', 'r', 'Live status of a flight: departure and arrival times, delays, gate, terminal and baggage belt.', [
        'flight_number!:s:Airline code and number, e.g. BA 117.',
        'date:date:Day of departure (default today).',
      ]),
      tool('travel_check_in', 'w', 'Check in online for a booked flight, choose seats and get the boarding passes.', [
        'confirmation!:s:Booking reference.',
        'seat:s:Preferred seat.',
      ]),
      tool('travel_cancel_booking', 'd', 'Cancel a flight, hotel or car rental booking and report the refund or travel credit.', [
        'confirmation!:s:Booking reference.',
      ]),
      tool(
        'travel_entry_requirements',
        'r',
        'Visa rules, passport validity and other entry requirements for a nationality travelling to a country.',
        ['nationality!:s:Passport country.', 'destination!:s:Country visited.', 'purpose:e(tourism|business|transit):Purpose.'],
      ),
    ],
  },
  {
    domain: 'recipes',
    tools: [
      tool(
        'recipes_search',
        'r',
        'Find recipes by ingredients on hand, cuisine, diet (vegetarian, vegan, gluten-free) and total cooking time.',
        [
          'ingredients:s[]:What to use up.',
          'cuisine:s:Cuisine.',
          'diet:e(any|vegetarian|vegan|gluten_free|dairy_free):Diet.',
          'max_minutes:i:Total time limit.',
        ],
      ),
      tool('recipes_get', 'r', "A recipe's ingredients with quantities, method steps, servings and prep time.", [
        'recipe_id!:s:Recipe id.',
      ]),
      tool(
        'recipes_scale',
        'r',
        "Scale a recipe's ingredient quantities to another number of servings, converting between metric and US units if asked.",
        ['recipe_id!:s:Recipe id.', 'servings!:i:Servings wanted.', 'units:e(metric|us):Unit system.'],
      ),
      tool(
        'recipes_shopping_list',
        'wn',
        'Turn one or more recipes into a grocery list grouped by store aisle, minus what is already in the pantry.',
        ['recipe_ids!:s[]:Recipes to shop for.'],
        'Check the pantry with recipes_pantry before building a grocery list.',
      ),
      tool('recipes_nutrition', 'r', 'Calories, protein, carbohydrates, fat and fibre per serving for a recipe or a list of ingredients.', [
        'recipe_id:s:Recipe id.',
        'ingredients:s[]:Ingredients with quantities.',
      ]),
      tool('recipes_pantry', 'r', 'What is in the pantry, fridge and freezer, with use-by dates for perishables.', []),
      tool(
        'recipes_meal_plan',
        'wn',
        'Plan breakfasts, lunches and dinners for a week around dietary preferences, people to feed and a budget.',
        ['people!:i:How many to feed.', 'diet:s:Dietary preferences.', 'budget:n:Weekly budget.'],
      ),
      tool('recipes_substitute', 'r', 'Suggest substitutes for an ingredient (for example buttermilk or eggs) with the ratio to use.', [
        'ingredient!:s:What is missing.',
        'recipe_id:s:The recipe, for context.',
      ]),
    ],
  },
  {
    domain: 'fitness',
    tools: [
      tool('fitness_log_workout', 'wn', 'Log a workout: type (run, ride, strength, swim, yoga), duration, distance and perceived effort.', [
        'type!:e(run|ride|strength|swim|yoga|walk|other):Activity.',
        'minutes!:n:Duration.',
        'distance_km:n:Distance.',
        'effort:i:1-10.',
        'when:datetime:Start time (default now).',
      ]),
      tool('fitness_workout_history', 'r', 'Past workouts with weekly totals for distance and time, and personal records.', [
        'type:s:Only this activity.',
        'weeks:i:How many weeks back (default 4).',
      ]),
      tool('fitness_log_weight', 'wn', 'Record a body weight measurement and optionally body-fat percentage.', [
        'kg!:n:Weight in kilograms.',
        'body_fat:n:Percent.',
      ]),
      tool(
        'fitness_daily_activity',
        'r',
        'Steps, active minutes, calories burned and resting heart rate from the wearable for a day or range.',
        ['date:date:Day (default today).', 'days:i:Number of days ending on date.'],
      ),
      tool('fitness_sleep_summary', 'r', 'Sleep duration, stages (deep, light, REM) and sleep score per night from the wearable.', [
        'nights:i:How many recent nights (default 1).',
      ]),
      tool(
        'fitness_training_plan',
        'w',
        'Generate a training plan for a race (5k, 10k, half marathon, marathon) with weekly sessions up to race day.',
        ['event!:e(5k|10k|half_marathon|marathon):Race distance.', 'race_date!:date:Race day.', 'days_per_week:i:Training days.'],
      ),
      tool('fitness_book_class', 'w', "Book a spot in a class (spin, yoga, HIIT, pilates) at the user's gym.", [
        'class!:s:Class name.',
        'date!:date:Day.',
        'time:time:Start time.',
      ]),
    ],
  },
  {
    domain: 'home',
    tools: [
      tool('home_set_thermostat', 'wn', 'Set the heating or cooling target temperature for a zone, or switch the thermostat mode.', [
        'zone:s:Room or zone (default whole house).',
        'target_c:n:Target in Celsius.',
        'mode:e(heat|cool|auto|off|eco):Mode.',
      ]),
      tool('home_lights', 'wn', 'Turn lights on or off, dim them or change their colour, by room or by light name.', [
        'target!:s:Room or light name.',
        'on:b:On or off.',
        'brightness:i:0-100.',
        'color:s:Colour name.',
      ]),
      tool('home_lock', 'w', 'Lock or unlock a smart door lock and report its state.', [
        'door!:s:Which door.',
        'action!:e(lock|unlock):What to do.',
      ]),
      tool('home_camera_snapshot', 'r', 'Take a still image from a security camera and describe recent motion events.', [
        'camera!:s:Camera name.',
        'events_since:datetime:Motion events since.',
      ]),
      tool('home_run_scene', 'wn', 'Run a saved scene or routine, such as good night, movie time or away.', ['scene!:s:Scene name.']),
      tool('home_energy_usage', 'r', 'Electricity and gas consumption by day or hour, with cost and the devices that used the most.', [
        'start:date:First day.',
        'end:date:Last day.',
        'resolution:e(hour|day|month):Granularity.',
      ]),
      tool('home_list_devices', 'r', 'Every connected device with its room, type, online state and battery level.', [
        'room:s:Only this room.',
      ]),
      tool('home_arm_security', 'w', 'Arm or disarm the alarm system in home, away or night mode.', [
        'mode!:e(disarm|home|away|night):Alarm mode.',
        'code:s:Alarm code.',
      ]),
    ],
  },
];
